"""Rules read from the host model's event log: the order in which a kernel's own code did things, where a lesson
teaches that order and a kernel can keep C right without it.

Each program's ``trace`` lists its events in the order they happened (``runtime.Program.log``): the partition that
made each, what it was (``"wgmma"`` with its group, ``"wgmma wait"`` with the groups it retired, ``"arrive"`` and
``"wait"`` with their barrier, ``"tma store"``, ...). A rule returns None or one sentence.
"""
from __future__ import annotations


def _turn_barriers(events, consumers) -> set:
    """The barriers one consumer (a partition that issues wgmma) arrives on and another waits on: the turns."""
    waits = {(e["partition"], e["barrier"]) for e in events if e["what"] in ("wait", "wait blocks")}
    arrives = {(e["partition"], e["barrier"]) for e in events if e["what"] == "arrive" and e["partition"] in consumers}
    return {bar for who, bar in arrives if any(q != who and (q, bar) in waits for q in consumers)}


def turn_passed_while_products_run(programs) -> str | None:
    """Ping-pong's handover (lesson 33): a consumer hands the tensor cores to the other one (an arrive on the barrier
    the other waits on for its turn) as soon as its tile's last product is issued, while that product may still run:
    the other consumer's first products then queue behind it, and run while this one waits for its own and stores
    its tile. In each consumer's own order of events the handover must come before the ``warpgroup_mma_wait`` that
    retires the tile's last product. A handover after it keeps C right and undoes the overlap."""
    for prog in programs:
        events = prog.trace
        consumers = {e["partition"] for e in events if e["what"] == "wgmma"}
        if len(consumers) < 2:
            continue
        turns = _turn_barriers(events, consumers)
        where = f"program {prog.pid[0]}" + (f", CTA {prog.cta}" if getattr(prog, "cluster", None) else "")
        for at, event in enumerate(events):
            if event["what"] != "arrive" or event["barrier"] not in turns or event["partition"] not in consumers:
                continue
            who = event["partition"]
            before = [e for e in events[:at] if e["partition"] == who]
            issued = [i for i, e in enumerate(before) if e["what"] == "wgmma" and e.get("group") is not None]
            if not issued:
                continue
            last = before[issued[-1]]
            since = before[issued[-1] + 1:]
            if not any(e["what"] == "wgmma wait" and last["group"] in e.get("retired", ()) for e in since):
                continue
            stored = any(e["what"] in ("tma store", "smem.store") for e in since)
            lost = ("and only after storing its tile, so the other consumer's products cannot overlap this one's "
                    "epilogue at all: the two consumers run one after the other, products and store, as if one "
                    "warpgroup did all the work" if stored else
                    "so the other consumer's first products are issued only once this one's have all finished: the "
                    "tensor cores drain at every handover, where ping-pong keeps them fed")
            return (f"{where}: the {who} (a consumer) hands the turn over (its arrive on {event['barrier']}) only "
                    "after warpgroup_mma_wait retired "
                    f"its tile's last product, {lost}. Hand it over as soon as the last product is issued, before "
                    "the wait that retires it: the other consumer's products queue behind it and run while this one "
                    "waits and stores")
    return None
