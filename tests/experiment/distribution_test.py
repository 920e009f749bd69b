"""distribution: the strategy's choice and checks (in process); train.py on 2 logical CPU
devices and as two local workers (subprocesses on 127.0.0.1), whose weights must equal one
process's with the same global batch and seeds, also after kill -9 and a rerun."""

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import types

import numpy as np
import tensorflow as tf

import train
from tests import testing_utils as tu
from tf_fusedprop.experiment import callbacks, datasets, distribution, train_lib
from tf_fusedprop.experiment.config import ConfigError, json_values

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(ROOT, "train.py")
TWO_WORKERS = json.dumps(
    {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}}
)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def stub_strategy(replicas=1, workers=1, chief=True):
    """What `distribution` reads of a strategy, without starting a cluster."""
    resolver = None
    if workers > 1:
        spec = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{i}" for i in range(workers)]})
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            spec, task_type="worker", task_id=0 if chief else 1
        )
    return types.SimpleNamespace(
        num_replicas_in_sync=replicas,
        cluster_resolver=resolver,
        extended=types.SimpleNamespace(should_checkpoint=chief),
    )


class StrategyChoiceTest(tu.TestCase):
    def test_auto_is_multi_worker_with_several_tasks_in_tf_config_else_mirrored_with_gpus_else_one_device(self):
        self.assertEqual(distribution.resolve("auto", {"TF_CONFIG": TWO_WORKERS}), "multi_worker")
        several_gpus = len(tf.config.list_physical_devices("GPU")) > 1
        self.assertEqual(distribution.resolve("auto", {}), "mirrored" if several_gpus else "one_device")
        self.assertEqual(distribution.resolve("tpu", {"TF_CONFIG": TWO_WORKERS}), "tpu")

    def test_tf_config_tasks_counts_chief_and_workers(self):
        cluster = {"chief": ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]}
        self.assertEqual(distribution.tf_config_tasks({"TF_CONFIG": json.dumps({"cluster": cluster})}), 3)
        self.assertEqual(distribution.tf_config_tasks({}), 0)
        with self.assertRaisesRegex(distribution.StrategyError, r"TF_CONFIG is not a cluster description"):
            distribution.tf_config_tasks({"TF_CONFIG": "worker0"})

    def test_one_device_is_the_default_strategy(self):
        strategy = distribution.make_strategy("one_device")
        self.assertIs(strategy, tf.distribute.get_strategy())
        self.assertEqual(distribution.facts(strategy), {"strategy": "one_device", "replicas": 1, "workers": 1})
        self.assertRegex(distribution.describe(strategy), r"^strategy: one_device, 1 replica \((CPU|GPU):0\)$")
        self.assertTrue(distribution.is_chief(strategy))

    def test_train_py_offers_every_strategy(self):
        flag_values, _ = train._define_flags(["train.py"])
        self.assertEqual(flag_values["strategy"].parser.enum_values, list(distribution.STRATEGIES))

    def test_unknown_strategy_and_multi_worker_without_tf_config_are_one_line_errors(self):
        with self.assertRaisesRegex(distribution.StrategyError, r"unknown strategy 'gpu'; expected one of auto, "):
            distribution.make_strategy("gpu")
        with self.assertRaisesRegex(distribution.StrategyError, r"--strategy=multi_worker needs TF_CONFIG"):
            distribution.make_strategy("multi_worker", environ={})


class CheckRunTest(tu.TestCase):
    def test_global_batch_must_split_into_replicas_and_micro_batches(self):
        config = tu.tiny_config("ring8")
        config.update(batch_size=12, iter_size=2)
        distribution.check_run(config, "w", stub_strategy(replicas=2))
        with self.assertRaisesRegex(
            ConfigError,
            r"divisible by replicas x iter_size = 4 x 2 = 8; received batch_size=12 \(e.g. --config.batch_size=16\)",
        ):
            distribution.check_run(config, "w", stub_strategy(replicas=4))

    def test_several_workers_need_an_explicit_workdir(self):
        config = tu.tiny_config("ring8")
        distribution.check_run(config, None, stub_strategy(replicas=2))
        with self.assertRaisesRegex(ConfigError, r"several workers need an explicit workdir"):
            distribution.check_run(config, None, stub_strategy(replicas=2, workers=2))


class OutputDirTest(tu.TestCase):
    def test_the_chief_writes_the_workdir(self):
        with distribution.output_dir("w", stub_strategy(workers=2)) as out:
            self.assertEqual(out, "w")

    def test_another_worker_writes_a_temporary_directory_removed_also_on_error(self):
        with distribution.output_dir("w", stub_strategy(workers=2, chief=False)) as out:
            self.assertIn("fusedprop-worker1-", out)
            open(os.path.join(out, "file"), "w").close()
        self.assertFalse(os.path.exists(out))
        with self.assertRaises(KeyError):
            with distribution.output_dir("w", stub_strategy(workers=2, chief=False)) as out:
                raise KeyError
        self.assertFalse(os.path.exists(out))


class FitUnderTest(tu.TestCase):
    def test_several_replicas_run_one_step_per_execution(self):
        model = types.SimpleNamespace(steps_per_execution=10)
        note = distribution.fit_under(model, stub_strategy(replicas=1))
        self.assertEqual((model.steps_per_execution, note), (10, None))
        note = distribution.fit_under(model, stub_strategy(replicas=2))
        self.assertEqual(model.steps_per_execution, 1)
        self.assertEqual(
            note,
            "steps_per_execution 10 -> 1 on 2 replicas (Keras's multi-step loop fails under "
            "tf.distribute, keras-team/keras#19246).",
        )


class ShardTest(tu.TestCase):
    def test_pipelines_are_sharded_by_data_and_endless(self):
        stream = tf.data.Dataset.counter().batch(2)  # Finite to TensorFlow, as ring8's.
        dataset = distribution.shard_by_data(stream)
        self.assertEqual(
            dataset.options().experimental_distribute.auto_shard_policy, tf.data.experimental.AutoShardPolicy.DATA
        )
        self.assertEqual(dataset.cardinality(), tf.data.INFINITE_CARDINALITY)
        self.assertAllEqual(list(dataset.take(2)), list(stream.take(2)))


# --------------------------------------------------------------------------------------------
# train.py under a strategy, against one process (subprocesses)
# --------------------------------------------------------------------------------------------


def _flat(value, prefix=""):
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}{key}.").items()}
    return {prefix[:-1]: value}


def config_flags(name, config):
    """The `train.py` flags that give `config`, a changed `configs/<name>.py` config."""
    base = _flat(json_values(tu.CONFIG_MODULES[name].get_config()))
    changed = {key: value for key, value in _flat(json_values(config)).items() if base.get(key) != value}
    return [f"--config=configs/{name}.py"] + [f"--config.{key}={value}" for key, value in sorted(changed.items())]


def tiny(name, **fields):
    """`tu.tiny_config(name)` without evaluation and without a warm start, then `fields`."""
    config = tu.tiny_config(name)
    config.update(eval_samples=0, batch_size=16, warmup=0)
    config.update(**fields)
    return config


def reference_run(config, workdir):
    """`train_lib.train` in this process, on one device, uninterrupted."""
    with contextlib.redirect_stdout(io.StringIO()):
        return train_lib.train(config, workdir=workdir, verbose=0)


def final_state(config, workdir):
    """Both players' weights (spectral-norm vectors included) and both optimizers' variables
    from the last checkpoint in `workdir`."""
    gan = train_lib.build_gan(config)
    checkpoint = callbacks.BackupAndRestore(os.path.join(workdir, "backup"))
    checkpoint.restore(gan)
    variables = (
        gan.generator.weights + gan.discriminator.weights + gan.d_optimizer.variables + gan.g_optimizer.variables
    )
    return [np.asarray(v) for v in variables]


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class _Process:
    """A subprocess whose output goes to a file; killed when the test ends."""

    def __init__(self, test, command, env, log):
        self.log = log
        with open(log, "w") as f:
            self.popen = subprocess.Popen(command, cwd=test.get_temp_dir(), env=env, stdout=f, stderr=subprocess.STDOUT)
        test.addCleanup(self.kill)

    def kill(self):
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()

    def wait(self, timeout):
        """The exit status (None, and the process killed, if it runs past `timeout`) and output."""
        try:
            status = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            status = None
        with open(self.log) as f:
            return status, f.read()


def start_workers(test, flags, workdir, tag, env_of=None):
    """Two `train.py --strategy=multi_worker` processes, one cluster on free local ports; with
    `env_of` (`{index: environment}`), `tu.WAITS_AT_STEP` with that worker's environment added."""
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    workers = []
    for index in range(2):
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})}
        program = [TRAIN]
        if env_of is not None:
            env.update(PYTHONPATH=os.path.dirname(TRAIN), **env_of.get(index, {}))
            program = ["-c", tu.WAITS_AT_STEP]
        command = [sys.executable, *program, "--strategy=multi_worker", f"--workdir={workdir}", *flags]
        workers.append(_Process(test, command, env, os.path.join(test.get_temp_dir(), f"{tag}-worker{index}.log")))
    return workers


def worker_dir(output):
    """The temporary directory that a non-chief worker said it writes to."""
    return output.split("Not the chief: this worker writes to ", 1)[1].split(" (deleted", 1)[0]


class DistributedTrainTest(tu.TestCase):
    def assertStatesClose(self, actual, expected):
        self.assertEqual(len(actual), len(expected))
        for a, e in zip(actual, expected):
            self.assertAllClose(a, e, rtol=1e-4, atol=1e-5)

    def test_mirrored_on_two_logical_cpus_trains_like_one_device(self):
        """D is spectrally normalized: equal weights mean that both replicas used the same
        power-iteration vector (another one would change replica 1's gradients)."""
        tmp = self.get_temp_dir()
        config = tiny("ring8", steps=4, steps_per_epoch=2, steps_per_execution=2)
        config.discriminator.spectral_norm = True
        flags = config_flags("ring8", config) + ["--strategy=mirrored", "--cpu_devices=2"]
        script = (
            "import sys, train\n"
            "print('BAD_BATCH', train.run(['train.py', *sys.argv[1:], '--config.batch_size=7', '--workdir=bad']))\n"
            "sys.exit(train.run(['train.py', *sys.argv[1:], '--workdir=run']))\n"
        )
        env = {**os.environ, "PYTHONPATH": ROOT}
        env.pop("TF_CONFIG", None)
        result = subprocess.run(
            [sys.executable, "-c", script, *flags], cwd=tmp, env=env, capture_output=True, text=True, timeout=180
        )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertIn("BAD_BATCH 2", result.stdout)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        self.assertEqual(
            errors,
            [
                "error: config.batch_size (the global batch) must be divisible by replicas x iter_size = 2 x 1 = 2; "
                "received batch_size=7 (e.g. --config.batch_size=8)."
            ],
        )
        self.assertFalse(os.path.exists(os.path.join(tmp, "bad")))
        self.assertIn("strategy: mirrored, 2 replicas (CPU:0, CPU:1)\n", result.stdout)
        self.assertIn("steps_per_execution 2 -> 1 on 2 replicas", result.stdout)
        summary = read_json(os.path.join(tmp, "run", "summary.json"))
        self.assertEqual(
            (summary["steps"], summary["strategy"], summary["replicas"], summary["workers"]), (4, "mirrored", 2, 1)
        )

        reference = reference_run(config, os.path.join(tmp, "one_device"))
        self.assertEqual((reference["strategy"], reference["replicas"]), ("one_device", 1))
        self.assertStatesClose(
            final_state(config, os.path.join(tmp, "run")), final_state(config, os.path.join(tmp, "one_device"))
        )

    def test_each_worker_takes_its_replicas_rows_of_one_process_batches(self):
        """Every worker runs the pipeline and keeps its rows of each global batch (DATA sharding):
        worker i gets rows [8i, 8i + 8) of the one-process batch of 16, for a shuffled array
        (digits, `from_tensor_slices`), a stream of stateless samples (ring8, `counter().map`)
        and a folder of the user's images, prepared once into the cache and mirrored."""
        tmp = self.get_temp_dir()
        folder, cache = tu.image_folder(os.path.join(tmp, "images"), count=40), os.path.join(tmp, "cache")

        def tiny_config(name):
            config = tu.tiny_config(name)
            config.batch_size = 16
            if name == "images":
                config.update(data=folder, cache_dir=cache, image_size=8, mirror=True)
            return config

        script = (
            "import sys, numpy as np\n"
            "from tests import testing_utils as tu\n"
            "from tf_fusedprop.experiment import datasets, distribution\n"
            "strategy = distribution.make_strategy('multi_worker')\n"
            "rows = {}\n"
            "for name in ('digits', 'ring8', 'images'):\n"
            "    config = tu.tiny_config(name); config.batch_size = 16\n"
            "    if name == 'images': config.update(data=sys.argv[2], cache_dir=sys.argv[3], image_size=8, mirror=True)\n"
            "    batches = iter(strategy.experimental_distribute_dataset(distribution.shard_by_data(\n"
            "        datasets.open_dataset(config).pipeline(7))))\n"
            "    rows[name] = np.stack([strategy.experimental_local_results(next(batches))[0] for _ in range(3)])\n"
            "np.savez(sys.argv[1], **rows)\n"
        )
        cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
        workers = []
        for index in range(2):
            env = {
                **os.environ,
                "PYTHONPATH": ROOT,
                "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
            }
            command = [sys.executable, "-c", script, os.path.join(tmp, f"rows{index}.npz"), folder, cache]
            workers.append(_Process(self, command, env, os.path.join(tmp, f"rows{index}.log")))
        for worker in workers:
            status, output = worker.wait(timeout=120)
            self.assertEqual(status, 0, output[-3000:])
        for name in ("digits", "ring8", "images"):
            config = tiny_config(name)
            one_process = np.stack([b.numpy() for b in datasets.open_dataset(config).pipeline(7).take(3)])
            for index in range(2):
                with np.load(os.path.join(tmp, f"rows{index}.npz")) as rows:
                    self.assertAllEqual(rows[name], one_process[:, 8 * index : 8 * index + 8])

    def assertRunEndsLikeOneProcess(self, config, workdir, workers, resumed_from, chief_runs):
        """`workers` (started with `config`'s flags) exit 0 as a two-worker run of `workdir` that
        resumed from epoch `resumed_from` (0: none), and end where one process does."""
        (chief_status, chief_output), (other_status, other_output) = [w.wait(timeout=180) for w in workers]
        self.assertEqual(chief_status, 0, chief_output[-3000:])
        self.assertEqual(other_status, 0, other_output[-3000:])
        self.assertIn("strategy: multi_worker, 2 replicas (CPU:0 on worker 0 of 2 workers, chief)", chief_output)
        self.assertIn(
            "strategy: multi_worker, 2 replicas (CPU:0 on worker 1 of 2 workers, not the chief)", other_output
        )
        self.assertIn("steps_per_execution 5 -> 1 on 2 replicas", chief_output)
        self.assertFalse(os.path.exists(worker_dir(other_output)))
        summary = read_json(os.path.join(workdir, "summary.json"))
        self.assertEqual(
            (summary["steps"], summary["strategy"], summary["replicas"], summary["workers"]),
            (config.steps, "multi_worker", 2, 2),
        )
        self.assertEqual(summary["resumed_from_epoch"], resumed_from)
        # What a kill left half-written the rerun removed; the lock is empty, the run over.
        self.assertCountEqual(
            os.listdir(workdir), ["backup", "config.json", "generator", "lock", "logs", "samples", "summary.json"]
        )
        with open(os.path.join(workdir, "lock")) as f:
            self.assertEqual(f.read(), "")
        self.assertLen(os.listdir(os.path.join(workdir, "logs")), chief_runs)  # The chief's runs only.

        reference_dir = os.path.join(self.get_temp_dir(), "one_process")
        reference_run(config, reference_dir)  # uninterrupted: stopped and rerun workers end as it does
        self.assertStatesClose(final_state(config, workdir), final_state(config, reference_dir))
        return chief_output, other_output

    def two_worker_config(self, form, iter_size, spectral_norm, steps):
        """ring8's MLPs have no BatchNorm (whose statistics are per replica, so a G with it
        trains on several replicas like iter_size micro-batches, not like one device). Spectral
        norm and accumulation are not combined here: each micro-batch advances the power
        iteration, and 1 and 2 replicas cut the batch into different micro-batches (measured:
        weights 1e-3 apart after 20 updates)."""
        # ring8's warm start (alternating, then the form) switches at update 10, inside the run.
        config = tiny(
            "ring8", form=form, iter_size=iter_size, steps=steps, steps_per_epoch=10, steps_per_execution=5, warmup=10
        )
        config.discriminator.spectral_norm = spectral_norm
        return config

    def test_two_local_workers_train_fused_with_spectral_norm_like_one_process(self):
        """Fused (after its alternating warm start) with spectral norm, uninterrupted."""
        workdir = os.path.join(self.get_temp_dir(), "run")
        config = self.two_worker_config("fused", 1, True, steps=20)
        workers = start_workers(self, config_flags("ring8", config), workdir, "run")
        self.assertRunEndsLikeOneProcess(config, workdir, workers, resumed_from=0, chief_runs=1)

    def test_kill_9_of_the_chief_then_sigterm_to_one_worker_and_each_rerun_resumes_like_one_process(self):
        """Alternating with accumulation (fused's accumulation on two replicas: gan_test's
        MirroredStrategyTest), in one workdir run three times by two workers: the
        chief killed (kill -9) after its first checkpoint, the other worker failing on its own,
        and the rerun resuming from that checkpoint; in that rerun SIGTERM to the other worker
        (not the chief) stops both after the same step (mid-epoch), saved; the last rerun resumes
        there and ends as one uninterrupted process does."""
        tmp = self.get_temp_dir()
        workdir = os.path.join(tmp, "run")
        config = self.two_worker_config("alternating", 2, False, steps=30)
        flags = config_flags("ring8", config)

        # kill -9 the chief after its first checkpoint; the other worker fails on its own.
        chief, other = start_workers(self, flags, workdir, "killed")
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(workdir, "backup", "checkpoint.json")):
            self.assertTrue(chief.popen.poll() is None and time.monotonic() < deadline, "no checkpoint was written")
            time.sleep(0.02)
        chief.kill()
        status, output = other.wait(timeout=60)
        self.assertNotIn(status, (0, None), output[-3000:])
        self.assertFalse(os.path.exists(worker_dir(output)))  # Deleted on the error too.
        self.assertFalse(os.path.exists(os.path.join(workdir, "summary.json")))
        resumed_from = read_json(os.path.join(workdir, "backup", "checkpoint.json"))["epoch"]
        self.assertBetween(resumed_from, 1, 2)

        # The rerun resumes from that checkpoint; SIGTERM to worker 1 at update 25.
        chief, other = start_workers(self, flags, workdir, "signalled", env_of={1: {"TF_FUSEDPROP_TEST_WAIT_AT": "25"}})
        waiting, deadline = os.path.join(tmp, "waiting"), time.monotonic() + 120
        while not os.path.exists(waiting):  # worker 1 waits after update 25, the chief in the next collective
            self.assertTrue(other.popen.poll() is None and time.monotonic() < deadline, "it never reached step 25")
            time.sleep(0.02)
        other.popen.send_signal(signal.SIGTERM)
        os.remove(waiting)
        (chief_status, chief_output), (other_status, other_output) = chief.wait(timeout=60), other.wait(timeout=60)
        self.assertEqual((chief_status, other_status), (143, 143), chief_output[-2000:] + other_output[-2000:])
        for output in (chief_output, other_output):
            self.assertIn(f"Resuming from epoch {resumed_from}/3 ({10 * resumed_from} steps done).", output)
            self.assertRegex(
                output, r"stopped by SIGTERM at step 25, saved in .*backup; run python .* to resume from it"
            )
        saved = read_json(os.path.join(workdir, "backup", "checkpoint.json"))
        self.assertEqual((saved["steps"], saved["epoch"], saved["epoch_steps"]), (25, 2, 5))

        # The last rerun resumes from update 25 and ends as one process.
        workers = start_workers(self, flags, workdir, "resumed")
        outputs = self.assertRunEndsLikeOneProcess(config, workdir, workers, resumed_from=2, chief_runs=3)
        for output in outputs:
            self.assertIn("Resuming from step 25: epoch 3/3, 5 of its 10 steps done.", output)


if __name__ == "__main__":
    tf.test.main()
