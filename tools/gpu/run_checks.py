"""Run some checks of one lesson by key, on its solution, and print each outcome (a GPU session's quick look; the
recording runs them all): python tools/gpu/run_checks.py NN key [key ...]"""
import sys
import time

from gluon_course import load_checks, load_solution
from gluon_course.grading.runner import run_check

number, keys = sys.argv[1], sys.argv[2:]
checks = load_checks(number).CHECKS
module = load_solution(number)
for key in keys:
    started = time.time()
    outcome = run_check(checks.check(key), module, number)
    print(f"{number}/{key} ({time.time() - started:.0f} s): {outcome.line()}", flush=True)
