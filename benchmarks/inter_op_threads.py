"""What one inter-op thread costs: `speed.py` in fresh processes, alternating the setting.

    python benchmarks/inter_op_threads.py [--pairs=3] [--settings=1,0] -- SPEED_PY_FLAGS...
    python benchmarks/inter_op_threads.py -- --config=configs/images.py --config.data=DIR \\
        --config.image_size=64 --config.inception_path=None --forms=alternating,fused --rounds=3

TensorFlow reads its inter-op thread count (`TF_NUM_INTEROP_THREADS`; "0" is its default, one
per core) once per process, so the settings cannot be timed in one process as `speed.py`
times its levers: each pair of rounds runs `speed.py` once per setting, in that order, and the
table gives, per form, the median seconds per step of each setting over the pairs and their
ratio to the first setting. `train.py` runs one thread (`TENSORFLOW_ENVIRONMENT`): with more,
the bfloat16 step at 64 px did not repeat bit for bit (docs/guide.md#same-seed-same-run).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import machine

SPEED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "speed.py")


def run_speed(setting, speed_flags, program=SPEED):
    """`speed.py speed_flags` in a fresh process with `TF_NUM_INTEROP_THREADS=setting`: its JSON line."""
    env = {**os.environ, "TF_NUM_INTEROP_THREADS": setting}
    result = subprocess.run([sys.executable, program, *speed_flags], env=env, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"speed.py failed with TF_NUM_INTEROP_THREADS={setting}:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="rounds of one speed.py run per setting")
    parser.add_argument("--settings", default="1,0", help="TF_NUM_INTEROP_THREADS values; the first is the baseline")
    parser.add_argument("--speed", default=SPEED, help="the timing script (benchmarks/speed.py; tests pass a stand-in)")
    parser.add_argument("speed_flags", nargs="*", help="flags for speed.py (after --)")
    args = parser.parse_args()
    settings = args.settings.split(",")
    print(machine.cpu()[0], "; flags:", " ".join(machine.cpu()[1]), f"; {os.cpu_count()} cpus")
    seconds = {setting: {} for setting in settings}
    for pair in range(args.pairs):
        for setting in settings:
            result = run_speed(setting, args.speed_flags, args.speed)
            if pair == 0 and setting == settings[0]:
                print(result["header"].rsplit("; inter-op", 1)[0])
            for form, value in result["seconds_per_step"].items():
                seconds[setting].setdefault(form, []).append(value)
            print(
                f"  pair {pair + 1}/{args.pairs}, TF_NUM_INTEROP_THREADS={setting}: "
                + ", ".join(f"{form} {value:.4f}" for form, value in result["seconds_per_step"].items()),
                flush=True,
            )
    base = settings[0]
    print(f"\nmedian s/step over {args.pairs} pairs (ratio: the setting's time / TF_NUM_INTEROP_THREADS={base}'s)")
    for form in seconds[base]:
        cells = []
        for setting in settings:
            median = statistics.median(seconds[setting][form])
            cells.append(f"{setting}: {median:.4f} ({median / statistics.median(seconds[base][form]):.3f}x)")
        print(f"{form:<36} " + "   ".join(cells))
    print(json.dumps({"settings": settings, "seconds_per_step": seconds}))


if __name__ == "__main__":
    main()
