# GPU call 1 for lessons 10-14: untimed checks in parallel, then timed figures serially. Logs under $OUT.
source .device/activate.sh
export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMPILE_CACHE=$PWD/.device/compile-cache
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,power.limit,driver_version --format=csv > $OUT/gpu.txt 2>&1
start=$(date +%s)
for n in 10 11 12 13 14; do
  timeout 330 python -m gluon_course check $n --solution --no-figures > $OUT/check-$n.log 2>&1 &
done
timeout 330 python -m pytest tests/test_lessons.py -q -p no:cacheprovider -k "plant_is_rejected and (10- or 11- or 12- or 13- or 14-)" > $OUT/plants.log 2>&1 &
wait
echo "phase A: $(( $(date +%s) - start )) s" | tee -a $OUT/gpu.txt
timeout $(( 570 - ($(date +%s) - start) )) python tools/gpu/figures.py $OUT/figures.json 10 11 12 13 14 --sweep 14 13 > $OUT/figures.log 2>&1
echo "total: $(( $(date +%s) - start )) s" | tee -a $OUT/gpu.txt
cd $OUT && for f in check-*.log; do echo "== $f"; tail -4 $f; done; tail -8 plants.log; cat figures.log | cut -c1-150
