"""train.py: bad input (in process), the default run's artefacts and resume after SIGKILL
(in subprocesses)."""

import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import time

import pytest

import train
from tests.testing_utils import read_events

TRAIN = os.path.abspath(train.__file__)


def run_cli(capsys, *args):
    """`train.run` in this process: (exit status, stdout, stderr)."""
    status = train.run(["train.py", *args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--config.nonexistent=1"], r"unknown config key 'nonexistent' \(received --config.nonexistent=1\); valid keys here: batch_size"),
        (["--config.generator.depth=2"], r"unknown config key 'generator.depth' .*; valid keys here: width\."),
        (["--config.steps=abc"], r"bad value for config.steps: .*'abc'.*expected a value of type int"),
        (["--config=configs/nofile.py"], r"cannot load the config file .*nofile.py.*with one of: cifar10_cnn_hinge.py"),
        (["--config=configs/cifar10_cnn_hinge.py:fused"], r"unknown config variant 'fused'; expected one of alternating, inverse"),
        (["--bogus=1"], r"Unknown command line flag 'bogus'.*--workdir=DIR"),
        (["--config.loss=hinge"], r"invalid \(loss, form\) pair: The hinge loss does not support form='fused'"),
        (["--config.loss=l2"], r"unknown loss: received config.loss='l2'"),
        (["--config.steps=0"], r"config.steps must be a positive integer; received steps=0"),
        (["--workdir={tmp}/file/run"], r"cannot write to workdir '.*file/run' \(NotADirectoryError"),
        (
            ["--config=configs/cifar10_cnn_ns.py", "--config.data_dir={tmp}"],
            r"CIFAR-10 is not available offline: .*data_dir=.*--config.data_dir=DIR",
        ),
        (
            ["--config=configs/cifar10_cnn_ns.py", "--config.inception_path=https://tfhub.dev/x"],
            r"received path_or_url='https://tfhub.dev/x', which is a URL.*\(config.inception_path\)",
        ),
    ],
)
def test_bad_input_is_one_line_with_exit_status_2(args, message, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    args = [arg.format(tmp=tmp_path) for arg in args]
    if not any(arg.startswith("--workdir") for arg in args):
        args.append(f"--workdir={tmp_path / 'run'}")
    status, out, err = run_cli(capsys, *args)
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "Traceback" not in err
    assert re.search(message, err), err
    assert not os.path.exists(tmp_path / "run")


def test_config_paths_resolve_from_any_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, err = run_cli(capsys, "--config=configs/ring8.py", "--config.loss=hinge")
    assert status == 2 and "hinge loss does not support form='fused'" in err  # The file loaded.


def test_progress_bar_on_a_terminal_and_one_line_per_epoch_otherwise(monkeypatch, capsys):
    from tf_fusedprop.experiment import train_lib

    calls = []
    monkeypatch.setattr(train_lib, "train", lambda config, workdir, verbose: calls.append((config.name, workdir, verbose)))
    for tty in (True, False):
        monkeypatch.setattr(sys.stdout, "isatty", lambda: tty, raising=False)
        assert train.run(["train.py", "--workdir=w"]) == 0
    assert calls == [("digits", "w", 1), ("digits", "w", 2)]


def test_help(capsys):
    status, out, _ = run_cli(capsys, "--help")
    assert status == 0 and "--config.<key>=<value>" in out and "ring8.py" in out


def _python(*args, cwd, timeout=180):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_default_run_leaves_its_artefacts_and_the_generator_reloads_in_a_fresh_process(tmp_path):
    workdir = tmp_path / "run"
    result = _python(
        TRAIN, "--config.steps=4", "--config.steps_per_epoch=2", "--config.batch_size=16", "--config.eval_samples=50",
        "--config.generator.width=8", "--config.discriminator.width=8", f"--workdir={workdir}", cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "Epoch 1/2" in result.stdout and "FID (digits classifier, 50 samples)" in result.stdout
    assert os.listdir(tmp_path) == ["run"]

    assert sorted(os.listdir(workdir / "samples")) == ["epoch_0001.png", "epoch_0002.png"]
    summary = json.loads((workdir / "summary.json").read_text())
    assert summary["steps"] == 4 and summary["steps_per_second"] > 0 and summary["config"]["name"] == "digits"
    assert summary["final_metric"]["name"] == "fid" and summary["final_metric"]["value"] > 0
    assert [f for f in os.listdir(workdir / "cache") if f.startswith("digits_classifier")]
    events = read_events(str(workdir / "logs"))
    assert {"d_loss", "g_loss", "fid", "steps_per_second", "samples", "config"} <= set(events)
    assert [step for step, _, _ in events["fid"]] == [2, 4]

    reload = _python(
        "-c",
        "import sys, numpy as np, tensorflow as tf;"
        "generator = tf.saved_model.load(sys.argv[1]);"
        "images = generator.serve(tf.random.normal([3, 32])).numpy();"
        "print(images.shape, images.min() >= -1, images.max() <= 1)",
        str(workdir / "generator"),
        cwd=tmp_path,
        timeout=120,
    )
    assert reload.returncode == 0, reload.stderr[-3000:]
    assert reload.stdout.strip().endswith("(3, 16, 16, 1) True True")


def _md5(path):
    return hashlib.md5(open(path, "rb").read()).hexdigest()


def test_sigkill_then_the_same_command_resumes_from_the_last_checkpoint(tmp_path):
    command = [
        sys.executable, TRAIN, "--config=configs/ring8.py", "--config.steps=2000", "--config.steps_per_epoch=200",
        "--config.eval_samples=200", "--config.grid_samples=200", "--config.generator.units=32",
        "--config.discriminator.units=32",
    ]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not glob.glob(str(tmp_path / "runs" / "ring8-*" / "backup" / "checkpoint.json")):
            assert process.poll() is None and time.monotonic() < deadline, "no checkpoint was written"
            time.sleep(0.02)
        assert process.poll() is None
    finally:
        process.kill()  # SIGKILL.
        process.wait()
    (workdir,) = glob.glob(str(tmp_path / "runs" / "ring8-*"))
    assert not os.path.exists(os.path.join(workdir, "summary.json"))
    epoch = json.load(open(os.path.join(workdir, "backup", "checkpoint.json")))["epoch"]
    assert 1 <= epoch < 10
    before = {name: _md5(os.path.join(workdir, "samples", name)) for name in os.listdir(os.path.join(workdir, "samples"))}
    assert {f"epoch_{e:04d}.png" for e in range(1, epoch + 1)} <= set(before)

    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    assert glob.glob(str(tmp_path / "runs" / "ring8-*")) == [workdir]  # The same run, resumed.
    assert f"Resuming from epoch {epoch}/10 ({200 * epoch} steps done)" in result.stdout
    assert "modes covered: " in result.stdout and "/8, high-quality samples: " in result.stdout

    summary = json.load(open(os.path.join(workdir, "summary.json")))
    assert summary["steps"] == summary["d_steps"] == 2000 and summary["resumed_from_epoch"] == epoch
    assert json.load(open(os.path.join(workdir, "backup", "checkpoint.json")))["steps"] == 2000
    samples = sorted(os.listdir(os.path.join(workdir, "samples")))
    assert samples == [f"epoch_{e:04d}.png" for e in range(1, 11)]
    for e in range(1, epoch + 1):
        name = f"epoch_{e:04d}.png"
        assert _md5(os.path.join(workdir, "samples", name)) == before[name]
    events = read_events(os.path.join(workdir, "logs"))
    assert sorted({step for step, _, _ in events["d_loss"]}) == list(range(200, 2001, 200))


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__]))
