"""benchmarks/inter_op_threads.py: each setting reaches its own fresh process, and the table reads their JSON."""

import json
import os

from tests import testing_utils as tu

#: A stand-in for speed.py: its seconds per step follow the inter-op threads it was given.
_FAKE_SPEED = """
import json, os, sys
threads = os.environ["TF_NUM_INTEROP_THREADS"]
seconds = {"config:x/fused": 1.0 if threads == "1" else 1.25, "config:x/alternating": 2.0}
print("timing ...")
print(json.dumps({"header": "CPU; flags: avx2; 2 cpus; tf 2; oneDNN=1; inter-op threads=" + threads,
                  "argv": sys.argv[1:], "seconds_per_step": seconds}))
"""


class InterOpThreadsTest(tu.TestCase):
    def test_alternating_processes_per_setting_and_the_ratio_to_the_first(self):
        fake = os.path.join(self.get_temp_dir(), "fake_speed.py")
        with open(fake, "w") as f:
            f.write(_FAKE_SPEED)
        result = tu.run_benchmark(
            "inter_op_threads.py", "--pairs=2", "--settings=1,0", f"--speed={fake}", "--", "--rounds=3"
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertIn("flags: ", result.stdout.splitlines()[0])
        pairs = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("pair ")]
        self.assertEqual(
            pairs,
            [
                "pair 1/2, TF_NUM_INTEROP_THREADS=1: config:x/fused 1.0000, config:x/alternating 2.0000",
                "pair 1/2, TF_NUM_INTEROP_THREADS=0: config:x/fused 1.2500, config:x/alternating 2.0000",
                "pair 2/2, TF_NUM_INTEROP_THREADS=1: config:x/fused 1.0000, config:x/alternating 2.0000",
                "pair 2/2, TF_NUM_INTEROP_THREADS=0: config:x/fused 1.2500, config:x/alternating 2.0000",
            ],
        )
        self.assertRegex(result.stdout, r"config:x/fused +1: 1.0000 \(1.000x\) +0: 1.2500 \(1.250x\)")
        self.assertEqual(
            json.loads(result.stdout.splitlines()[-1])["seconds_per_step"]["0"]["config:x/fused"], [1.25, 1.25]
        )
