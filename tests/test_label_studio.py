"""A real Label Studio round trip: our batch -> Label Studio (through its HTTP API) -> export
through its API -> `annotate import`.

Label Studio is a separate service, like a database server: the test setup installs the pinned
``label-studio`` from pip into its own virtual environment (``<repo>/.venv-labelstudio``, or
``$NLI_LABEL_STUDIO_VENV``; reused when already there), never into the project's. One server
per test run (session fixture) on 127.0.0.1 with its SQLite database in a temporary folder,
stopped at the end. Measured on the 2-core CI machine: install ~65 s (first time), start
~35 s (migrations of a new database), the round trip itself a few seconds.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from tests.test_annotate import LABELS, make_splits, run_cli, shift

pytest.importorskip("statsmodels")
pytest.importorskip("krippendorff")

LABEL_STUDIO_VERSION = "1.23.2"
REPO = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("NLI_LABEL_STUDIO_VENV", REPO / ".venv-labelstudio"))
INSTALL_TIMEOUT_S = 900
START_TIMEOUT_S = 240
TOKEN = "nli-test-token-7f3a9c"  # the admin's legacy API token, set when the user is created
ADMIN = "admin@nli-tests.local"

pytestmark = pytest.mark.slow


# --------------------------------------------------------------------------- install and start


def _install() -> tuple[Path, float]:
    """label-studio==VERSION in its own venv; returns its executable and the seconds spent."""
    exe = VENV / "bin" / "label-studio"
    stamp = VENV / f".installed-label-studio-{LABEL_STUDIO_VERSION}"
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.with_name(VENV.name + ".lock"), "w") as lock:  # two test runs never install at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and exe.exists():
            return exe, 0.0
        t0 = time.perf_counter()
        log = []
        steps = [[sys.executable, "-m", "venv", "--clear", str(VENV)],
                 [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                  f"label-studio=={LABEL_STUDIO_VERSION}"]]
        for cmd in steps:
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.skip(f"installing label-studio=={LABEL_STUDIO_VERSION} into {VENV} took more than "
                            f"{INSTALL_TIMEOUT_S} s ({' '.join(cmd[:4])} ...)")
            log.append(proc.stdout + proc.stderr)
            if proc.returncode != 0:
                lines = [l for l in (proc.stderr or proc.stdout).splitlines()
                         if l.strip() and not l.startswith("WARNING: Location")]
                pytest.skip(f"label-studio=={LABEL_STUDIO_VERSION} cannot be installed here: `{' '.join(cmd[:5])}` "
                            f"exited {proc.returncode}: {lines[-1] if lines else 'no output'}")
        stamp.write_text(f"label-studio=={LABEL_STUDIO_VERSION}\n")
        return exe, time.perf_counter() - t0


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabelStudio:
    """A tiny client of the Label Studio HTTP API (legacy token auth)."""

    def __init__(self, url: str, token: str):
        self.url, self.token = url, token

    def request(self, method: str, path: str, body=None, raw: bool = False):
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Token {self.token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: HTTP {exc.code}: {exc.read()[:500]!r}") from None
        return payload if raw else json.loads(payload or b"null")


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory):
    exe, install_s = _install()
    data_dir = tmp_path_factory.mktemp("label-studio-data")
    port = _free_port()
    env = {**os.environ, "LATEST_VERSION_CHECK": "false", "COLLECT_ANALYTICS": "false", "SENTRY_DSN": "",
           "FRONTEND_SENTRY_DSN": "", "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
           "LABEL_STUDIO_USERNAME": ADMIN, "LABEL_STUDIO_PASSWORD": "nli-tests-password",
           "LABEL_STUDIO_USER_TOKEN": TOKEN, "LOG_LEVEL": "WARNING"}
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):  # the project's venv must not leak in
        env.pop(var, None)
    log_path = data_dir / "server.log"
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [str(exe), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port),
             "--host", f"http://127.0.0.1:{port}", "--data-dir", str(data_dir), "--enable-legacy-api-token"],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(data_dir), start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace").splitlines()[-15:]
                pytest.fail(f"label-studio exited with {proc.returncode} while starting:\n" + "\n".join(tail))
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.perf_counter() - t0 > START_TIMEOUT_S:
                pytest.fail(f"label-studio did not answer /health within {START_TIMEOUT_S} s; log: {log_path}")
            time.sleep(1)
        start_s = time.perf_counter() - t0
        print(f"\nlabel-studio {LABEL_STUDIO_VERSION}: install {install_s:.0f} s, start {start_s:.0f} s ({url})")
        yield {"client": LabelStudio(url, TOKEN), "install_s": install_s, "start_s": start_s, "log": log_path}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


# --------------------------------------------------------------------------- the round trip


def test_label_studio_round_trip(label_studio, tmp_path, capsys):
    ls: LabelStudio = label_studio["client"]
    assert label_studio["start_s"] < START_TIMEOUT_S
    me = ls.request("GET", "/api/current-user/whoami")
    assert me["email"] == ADMIN

    splits = make_splits(tmp_path / "splits")
    batch = tmp_path / "batch"
    code, _, err = run_cli(["annotate", "export", "--data", splits, "--n", "12", "--seed", "2",
                            "--output", batch], capsys)
    assert code == 0, err
    config = (batch / "label_studio" / "config.xml").read_text(encoding="utf-8")
    tasks = json.loads((batch / "label_studio" / "tasks.json").read_text(encoding="utf-8"))

    # 1. a project with our labeling config (Label Studio validates it) and instructions
    project = ls.request("POST", "/api/projects", {
        "title": "RoNLI validation round 1", "label_config": config, "maximum_annotations": 3,
        "expert_instruction": (batch / "label_studio" / "instructions.html").read_text(encoding="utf-8"),
        "show_instruction": True})
    pid = project["id"]
    parsed = ls.request("GET", f"/api/projects/{pid}")["parsed_label_config"]["label"]
    assert parsed["type"] == "Choices" and parsed["to_name"] == ["hypothesis"]
    assert sorted(parsed["labels"]) == sorted(LABELS)  # the aliases: results store the canonical labels

    # 2. the tasks
    imported = ls.request("POST", f"/api/projects/{pid}/import", tasks)
    assert imported["task_count"] == 12
    listed = ls.request("GET", f"/api/tasks?project={pid}&page_size=100")["tasks"]
    task_of = {t["data"]["item_id"]: t["id"] for t in listed}
    assert sorted(task_of) == sorted(t["data"]["item_id"] for t in tasks)
    assert all(set(t["data"]) == {"item_id", "premise", "hypothesis", "round"} for t in listed)  # still blind

    # 3. three annotators with a planned disagreement, plus a fourth who skips one task
    users = {name: ls.request("POST", "/api/users/", {"email": f"{name}@nli-tests.local", "username": name,
                                                      "first_name": name})["id"]
             for name in ("ana", "bogdan", "carmen", "dan")}
    auto = dict(zip(*[pd.concat([pd.read_parquet(p) for p in splits.glob("*/*.parquet")])[c]
                      for c in ("pair_id", "label")]))
    items = sorted(task_of)
    names = {"contrasting": "Contrast", "entailment": "Implicație", "reasoning": "Raționament", "neutral": "Neutru"}
    plan = {
        "ana": {i: auto[i] for i in items},                                                   # the automatic label
        "bogdan": {i: shift(auto[i]) if k % 4 == 0 else auto[i] for k, i in enumerate(items)},  # 3 items off
        # carmen's choices are stored as the shown names (as a config without aliases would)
        "carmen": {i: names[shift(auto[i], 2) if k % 3 == 0 else auto[i]] for k, i in enumerate(items)},  # 4 off
    }
    for name, labels in plan.items():
        for item, label in labels.items():
            ls.request("POST", f"/api/tasks/{task_of[item]}/annotations/", {
                "completed_by": users[name], "lead_time": 4.2,
                "result": [{"from_name": "label", "to_name": "hypothesis", "type": "choices",
                            "value": {"choices": [label]}}]})
    ls.request("POST", f"/api/tasks/{task_of[items[1]]}/annotations/",
               {"completed_by": users["dan"], "was_cancelled": True, "result": []})

    # 4. exports through the API, in three formats
    files = {}
    for fmt, suffix in (("JSON", "json"), ("JSON_MIN", "json"), ("CSV", "csv")):
        body = ls.request("GET", f"/api/projects/{pid}/export?exportType={fmt}", raw=True)
        files[fmt] = tmp_path / f"export-{fmt.lower()}.{suffix}"
        files[fmt].write_bytes(body)
    exported = json.loads(files["JSON"].read_text(encoding="utf-8"))
    assert len(exported) == 12 and sum(len(t["annotations"]) for t in exported) == 37
    assert exported[0]["data"]["premise"] in {t["data"]["premise"] for t in tasks}  # UTF-8 kept (ă, ș, ț)

    # 5. our import, from each export
    results = {}
    for fmt, path in files.items():
        out = tmp_path / f"imp-{fmt.lower()}"
        code, stdout, err = run_cli(["annotate", "import", path, "--data", splits, "--batch", batch,
                                     "--output", out], capsys)
        assert code == 0, f"{fmt}: {err}"
        results[fmt] = json.loads((out / "agreement.json").read_text())
    s = results["JSON"]
    ids = {f"ls-user-{users[n]}" for n in ("ana", "bogdan", "carmen")}
    assert set(s["annotators"]) == ids and s["counts"]["annotations"] == 36
    assert s["counts"]["cancelled_label_studio"] == 1  # dan's skipped task
    # bogdan (k % 4 == 0) and carmen (k % 3 == 0) both leave item 0, each in another direction: 1-1-1
    assert s["counts"]["with_majority"] == 11 and s["counts"]["without_majority"] == 1
    assert s["cohen_kappa_auto_vs_majority"] == pytest.approx(1.0)  # every majority is the automatic label
    pairs = {frozenset((p["a"], p["b"])): p["observed_agreement"] for p in s["cohen_pairwise"]}
    a, b, c = (f"ls-user-{users[n]}" for n in ("ana", "bogdan", "carmen"))
    assert pairs[frozenset((a, b))] == pytest.approx(9 / 12)
    assert pairs[frozenset((a, c))] == pytest.approx(8 / 12)
    assert pairs[frozenset((b, c))] == pytest.approx(6 / 12)  # one of them off on 6 items (0,3,4,6,8,9)
    # Fleiss by hand: 6 unanimous items, 5 split 2-1, 1 split 1-1-1
    p_bar = (6 + 5 / 3 + 0) / 12
    margins = pd.Series([*plan["ana"].values(), *plan["bogdan"].values(),
                         *[{v: k for k, v in names.items()}[x] for x in plan["carmen"].values()]]).value_counts()
    p_e = sum((margins / 36) ** 2)
    assert s["fleiss_kappa"] == pytest.approx((p_bar - p_e) / (1 - p_e))
    for fmt in ("JSON_MIN", "CSV"):  # the same figures from the other export formats
        other = results[fmt]
        for key in ("fleiss_kappa", "krippendorff_alpha", "cohen_kappa_auto_vs_majority"):
            assert other[key] == pytest.approx(s[key]), (fmt, key)
        assert other["counts"]["with_majority"] == 11
    report = (tmp_path / "imp-json" / "report.md").read_text()
    assert "1 skipped (cancelled) Label Studio annotations" in report
    validated = pd.read_parquet(next((tmp_path / "imp-json" / "validated").glob("*/*.parquet")))
    assert len(validated) == 11 and (validated["label"] == validated["auto_label"]).all()
