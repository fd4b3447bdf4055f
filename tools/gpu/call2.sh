# GPU call 2: figures on an idle GPU first (nothing else running), tile sweep, then the planted mistakes alone.
source .device/activate.sh
export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMPILE_CACHE=$PWD/.device/compile-cache
mkdir -p $OUT/logs; L=$OUT/logs
nvidia-smi --query-compute-apps=pid,name --format=csv > $L/apps-before.txt 2>&1
start=$(date +%s)
timeout 200 python tools/gpu/figures.py $OUT/figures.json 10 11 12 13 14 --sweep 14 13 > $L/figures.log 2>&1
echo "figures: $(( $(date +%s) - start )) s" | tee $L/times.txt
timeout $(( 575 - ($(date +%s) - start) )) python -m pytest tests/test_lessons.py -q -p no:cacheprovider --durations=0 \
  -k "plant_is_rejected and (10- or 11- or 12- or 13- or 14-)" > $L/plants.log 2>&1
echo "plants rc=$? at $(( $(date +%s) - start )) s" | tee -a $L/times.txt
nvidia-smi --query-compute-apps=pid,name --format=csv > $L/apps-after.txt 2>&1
pkill -9 -f gluon_course.measure.isolated; pkill -9 -f compute-sanitizer
tar -czf $OUT/logs.tgz -C $OUT logs
cut -c1-140 $L/figures.log | grep -v "^nanobind\|^ - \|^See" ; grep -E "passed|failed|FAILED" $L/plants.log | cut -c1-200; cat $L/times.txt $L/apps-after.txt
