# One GPU call: the README's notebook test, live, one notebook at a time (each its own log under $OUT), stopping
# before the next one would start past a time budget, so that a long list comes back with what it finished.
#
#   OUT=gpu-out NBVAL_BUDGET=520 bash tools/gpu/nbval_each.sh 18 19 30
#
# Notebooks with AMD cells (01-05, 30) need the AMD compiles stored first: bash tools/gpu/compile_store.sh 01 30.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
source tools/gpu/compile_cache_env.sh         # the AMD compiles stored on a CPU machine
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader > "$OUT/apps-nbval.txt" 2>&1
# What in the environment can change a compile (Triton knobs, a CUDA install on the path): kept beside the logs.
{ env | grep -E "^(TRITON|CUDA|PTXAS)" | sort; python -c "from triton.backends.nvidia.compiler import get_ptxas; print('ptxas for sm_90', get_ptxas(90).path)"; } > "$OUT/env-nbval.txt" 2>&1
start=$(date +%s)
for n in "$@"; do
  spent=$(( $(date +%s) - start ))
  if [ "$spent" -gt "${NBVAL_BUDGET:-520}" ]; then echo "$n not run: $spent s spent"; continue; fi
  t0=$(date +%s)
  # SIGINT first: pytest then still prints the failures it has seen (a plain kill loses every diff); the notebook's
  # kernel is a child of its own, which the timeout does not reach: killed after each notebook, so that a cell it was
  # still running cannot load the GPU under the next notebook's timings.
  timeout -s INT -k 20 "${NBVAL_LIMIT:-240}" python -m pytest --nbval --nbval-current-env \
      --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider -q -rf lessons/$n-*/lesson.ipynb \
      > "$OUT/nbval-$n.log" 2>&1
  rc=$?
  pkill -9 -f "ipykernel_launche[r]"; pkill -9 -f "measure[.]isolated"
  echo "$n rc=$rc in $(( $(date +%s) - t0 )) s: $(grep -E 'passed|failed' "$OUT/nbval-$n.log" | tail -1)"
  grep -E "^FAILED" "$OUT/nbval-$n.log" | head -5
done
