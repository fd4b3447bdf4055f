"""Lesson 32's cost model (gluon_course.nvidia.cost_model) on timings made by a known model: the fit finds constants
that rank the candidates as the known model does, the judgement reads the pick's time from the survey, and a family
left out is judged by a model fitted without it."""
import math

from gluon_course.measure.families import FAMILIES
from gluon_course.nvidia import cost_model as cm
from gluon_course.nvidia.dispatch import survey_candidates

TRUTH = cm.Constants({"launch_us": 6.0, "unit_us": 2.0, "l2_tbs": 12.0, "hbm_tbs": 3.8, "slice_us_per_mib": 30.0,
                      "latency_us": 0.8}, {})


def _truth_with_tiles(space):
    tiles = {}
    for cfg in space:
        t = cm.tile_of(cfg)
        # a tile's pace: its products at 5 TFLOP/s an SM, narrow tiles slower, plus a little per step
        cols = cfg["BLOCK_N"] + (cfg.get("BLOCK_N2") or 0)
        flop = 2 * cfg["BLOCK_M"] * cols * cfg["BLOCK_K"]
        tiles[t] = flop / 5e6 * (1 + 24 / cols) + 0.02
    return cm.Constants(dict(TRUTH.globals), tiles)


def _survey(families):
    rows, every = [], []
    shapes = [(f, s) for f in families for s in FAMILIES[f].shapes() if s[0] in (1, 128, 4096)]
    for _, (M, N, K, _) in shapes:
        every += survey_candidates(M, N, K)
    truth = _truth_with_tiles(every)
    for family, (M, N, K, projection) in shapes:
        cands = []
        for cfg in survey_candidates(M, N, K):
            cands.append({**cfg, "us": round(cm.predict(truth, M, N, K, cfg), 2)})
        rows.append({"family": family, "projection": projection, "M": M, "N": N, "K": K,
                     "f_linear_us": min(c["us"] for c in cands) * 1.02, "candidates": cands})
    return {"families": {f: {} for f in families}, "rows": rows}, truth


def test_fit_recovers_the_ranking_of_a_known_model():
    survey, truth = _survey(["qwen2.5-7b", "llama-3-70b-tp8"])
    rows = [r[:5] for r in cm.survey_rows(survey)]
    fitted = cm.fit(rows)
    for family in survey["families"]:
        j = cm.judge(fitted, survey, family)
        assert j["of_best"] > 0.97, (family, j["of_best"])          # picks within 3% of the fastest, geomean
        assert all(s["pick_us"] >= s["best_us"] for s in j["shapes"])
        for s in j["shapes"]:                                        # the fastest named is the one timed fastest
            row = next(r for r in survey["rows"] if (r["M"], r["N"], r["K"], r["family"]) == (s["M"], s["N"], s["K"],
                                                                                            family))
            assert min((c["us"], cm.tile_of(c), c["SPLIT_K"]) for c in row["candidates"])[0] == s["best_us"]
            assert any((cm.tile_of(c), c["SPLIT_K"], c["us"]) == (s["best"], s["best_split"], s["best_us"])
                       for c in row["candidates"])
        assert math.isclose(j["vs_f_linear"], math.exp(sum(math.log(s["f_linear_us"] / s["pick_us"])
                                                           for s in j["shapes"]) / len(j["shapes"])))


def test_an_unknown_tile_is_refused_with_a_sentence():
    fitted = cm.Constants(dict(TRUTH.globals), {"128x256 k64x3 w8": 0.3})
    cfg = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "STAGES": 8, "num_warps": 4, "SPLIT_K": 1}
    try:
        cm.predict(fitted, 128, 512, 4096, cfg)
    except cm.UnknownTile as e:
        assert "64x64 k64x8 w4" in str(e) and "survey" in str(e)
    else:
        raise AssertionError("a tile the model was not fitted on was priced")
    assert cm.rank(fitted, 128, 512, 4096, [cfg]) == []


def test_leave_one_family_out_never_fits_on_the_family_it_judges(monkeypatch):
    survey, _ = _survey(["qwen2.5-1.5b", "llama-3-70b-tp8"])
    seen = []
    real_fit = cm.fit

    def spy(rows, sms=cm.SMS, **kw):
        seen.append({(r[0], r[1], r[2]) for r in rows})
        return real_fit(rows, sms, **kw)

    monkeypatch.setattr(cm, "fit", spy)
    out = cm.leave_one_family_out(survey)
    assert set(out) == {"qwen2.5-1.5b", "llama-3-70b-tp8"}
    for family, shapes_fitted in zip(survey["families"], seen):
        judged = {(s["M"], s["N"], s["K"]) for s in out[family]["shapes"]}
        assert judged and not judged & shapes_fitted


def test_the_model_counts_rounds_with_the_grid_it_is_handed():
    """The model counts a configuration's rounds with the grid it is handed (lesson 32's persistent_grid, through the
    dispatcher's table: the toolkit never imports a lesson), its own where it is handed none: a count that leaves out a
    partial last round prices 192 tiles on 132 SMs as one round, and the dispatcher then picks otherwise."""
    from gluon_course.nvidia.dispatch import DispatchTable

    cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "STAGES": 6, "num_warps": 4, "SPLIT_K": 1}
    assert cm.persistent_grid(192, 132) == (132, 2) and cm.persistent_grid(16, 132) == (16, 1)
    assert cm.work(512, 6144, 4096, cfg)["rounds"] == 2

    def floor(units, sms):
        return min(units, sms), units // min(units, sms)

    assert cm.work(512, 6144, 4096, cfg, grid=floor)["rounds"] == 1
    calls = []

    def spy(units, sms):
        calls.append((units, sms))
        return cm.persistent_grid(units, sms)

    model = cm.fitted()
    assert model is not None, "the committed survey (results/tuning/nvidia-h200-survey.json) fits a model"
    shape = (1024, 4096, 4096)                   # a shape the table does not list
    assert DispatchTable(model=model, grid=spy).config(*shape) == DispatchTable(model=model).config(*shape)
    # one count for each candidate whose tile the survey timed (a tile added to the space since is left out)
    assert len(calls) == len([c for c in survey_candidates(*shape) if cm.tile_of(c) in model.tiles])
    assert DispatchTable(model=model, grid=floor).config(*shape) != DispatchTable(model=model).config(*shape)


def test_a_tile_the_survey_has_not_timed_is_left_out_of_the_ranking():
    """A tile of the space that the survey has no timings of (one added after it) has no pace in the model: rank
    leaves it out, and the dispatcher picks among the tiles the model knows, never the unknown one."""
    from gluon_course.nvidia.dispatch import DispatchTable

    shape = (1024, 5120, 5120)
    space = survey_candidates(*shape)
    model = cm.fitted()
    unknown = cm.tile_of(min(space, key=lambda c: cm.predict(model, *shape, c) if cm.tile_of(c) in model.tiles
                             else math.inf))
    without = cm.Constants(dict(model.globals), {t: v for t, v in model.tiles.items() if t != unknown})
    ranked = cm.rank(without, *shape, space)
    assert ranked and all(cm.tile_of(cfg) != unknown for _, cfg in ranked)
    assert len(ranked) == len([c for c in space if cm.tile_of(c) in without.tiles]) < len(space)
    assert cm.tile_of(DispatchTable(model=without).config(*shape)) != unknown
