"""Kill -9 `langgraph dev` at random moments (ingest, graph build, delete), restart it, compare statuses.

    python bench/server_crash_trials.py                  # 20 trials
    python bench/server_crash_trials.py --trials 6 --parts 80 --seed 3

The server-side twin of `bench/crash_trials.py`, on the embedded default (`langgraph.json`: SQLite
checkpoints, LanceDB, local models). One scenario, in three phases after a set-up that is never
killed (two small documents, A and B, indexed and in a published graph):

    ingest   upload C (a long document, batches of 2 chunks) until it is indexed
    graph    the graph build C's upload scheduled, until the graph is up to date
    delete   delete B until it reads deleted and the graph is up to date again

A clean run times the phases. Each trial runs the scenario on a fresh server (its own working and
data directories), SIGKILLs the server's whole process group at a random moment of one phase (the
phases take turns; a phase that ends before the random moment hands the kill to the next one),
restarts it on the same directories and then does what a client would:

1. reads every status at once: a status that was final before the kill, outside the killed
   operation, must read exactly as before (status, chunk count, content hash);
2. waits until nothing is queued or running, and notes what the killed operation reads now (its
   "later truth": done by itself, or `failed` with error `interrupted` / `not_ingested` for an
   ingest run the crash lost, ...);
3. repeats the killed operation if its result is not there (upload C again, delete B again: the
   documented recoveries), rebuilds the graph if no build brings it up to date (an admin's
   `POST /orgs/{org}/graph`), then runs the remaining phases;
4. compares every status, the index's record ids per document and the graph's counts with the
   clean run's.
"""

from __future__ import annotations

import argparse
import random
import secrets
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))

from librarian.auth import mint_token  # noqa: E402
from tests.devserver import DevServer, server_env  # noqa: E402

ORG = "crashbench"
PHASES = ("ingest", "graph", "delete")
ACTIVE = ("queued", "running")
A, B, C = "docs/alpha.md", "docs/beta.md", "docs/crane.md"
GRAPH_KEYS = ("documents", "entities", "edges", "claims", "communitiesPerLevel", "upToDate")
SMALL = {
    "alpha.md": b"# Alpha\n\nAda Quill runs the alpha pump station in Leeds for Northwind.\n\n"
    + b"Northwind hired Ada Quill in Leeds. " * 12,
    "beta.md": b"# Beta\n\nBruno Vale inspects the beta valve at the Harwich depot of Northwind.\n",
}


def long_document(parts: int) -> bytes:
    return "\n\n".join(
        f"# Part {i}\n\nCrane {i} at the Harwich depot is inspected by Bruno Vale for Northwind. "
        + f"The crane {i} procedure is done step by step with care. " * 14
        for i in range(parts)
    ).encode()


def view(status: dict[str, Any] | None) -> tuple[Any, ...] | None:
    if status is None:
        return None
    return status.get("status"), status.get("chunkCount"), status.get("contentHash")


def _in(status: dict[str, Any] | None, wanted: tuple[str, ...]) -> dict[str, Any] | None:
    return status if status and status["status"] in wanted else None


def current(graph: dict[str, Any], documents: int) -> bool:
    built = graph["lastBuild"]["status"] == "published" and graph["upToDate"]
    return built and graph["documents"] == documents


class Client:
    """The calls a client makes, as a member (documents) and an admin (graph)."""

    def __init__(self, url: str, secret: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=60)
        self.member = {"Authorization": "Bearer " + mint_token(secret, "mia", ORG, ttl_s=86400)}
        self.admin = {"Authorization": "Bearer " + mint_token(secret, "ada", ORG, role="admin", ttl_s=86400)}

    def close(self) -> None:
        self.http.close()

    def upload(self, name: str, data: bytes) -> None:
        response = self.http.post(f"/orgs/{ORG}/documents", files={"file": (name, data)}, headers=self.member)
        response.raise_for_status()

    def delete(self, path: str) -> None:
        response = self.http.delete(f"/orgs/{ORG}/documents/{path}", headers=self.member)
        if response.status_code != 404:
            response.raise_for_status()

    def rebuild(self) -> None:
        self.http.post(f"/orgs/{ORG}/graph", headers=self.admin).raise_for_status()

    def status(self, path: str) -> dict[str, Any] | None:
        response = self.http.get(f"/orgs/{ORG}/documents/{path}", headers=self.member)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()

    def graph(self) -> dict[str, Any]:
        response = self.http.get(f"/orgs/{ORG}/graph", headers=self.member)
        response.raise_for_status()
        return response.json()

    def until(self, what: str, done: Callable[[], Any], deadline_s: float = 900.0) -> Any:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if result := done():
                return result
            time.sleep(0.25)
        raise TimeoutError(f"{what} not within {deadline_s:.0f}s")

    def status_is(self, path: str, *wanted: str) -> dict[str, Any]:
        return self.until(f"{path} {wanted}", lambda: _in(self.status(path), wanted))

    def graph_current(self, documents: int) -> dict[str, Any]:
        return self.until(f"graph of {documents} docs", lambda: current(g := self.graph(), documents) and g)

    def settled(self) -> dict[str, Any]:
        """Statuses once nothing is queued or running (documents and graph build)."""

        def quiet() -> dict[str, Any] | None:
            statuses = {p: self.status(p) for p in (A, B, C)}
            busy = any(s and s["status"] in ACTIVE for s in statuses.values())
            building = self.graph()["lastBuild"]["status"] in ACTIVE
            return None if busy or building else statuses

        return self.until("no queued or running work", quiet)


# --- the scenario, clean -------------------------------------------------------------------------------


def setup(client: Client) -> dict[str, tuple]:
    for name, data in SMALL.items():
        client.upload(name, data)
    seen = {p: view(client.status_is(p, "indexed")) for p in (A, B)}
    client.graph_current(2)
    return seen


def run_phase(client: Client, phase: str, parts: int, seen: dict[str, Any]) -> None:
    if phase == "ingest":
        client.upload("crane.md", long_document(parts))
        seen["answered"] = True
        seen[C] = view(client.status_is(C, "indexed"))
    elif phase == "graph":
        client.graph_current(3)
    else:
        client.delete(B)
        seen["answered"] = True
        seen[B] = view(client.status_is(B, "deleted"))
        client.graph_current(2)


class Driver(threading.Thread):
    """The scenario in a thread: marks when each phase starts and ends; stops at the first failure."""

    def __init__(self, url: str, secret: str, parts: int) -> None:
        super().__init__(daemon=True)
        self.client = Client(url, secret)
        self.parts = parts
        self.marks: dict[str, float] = {}
        self.seen: dict[str, Any] = {}  # statuses seen final, as they read then
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.seen.update(setup(self.client))
            for phase in PHASES:
                self.seen.pop("answered", None)
                self.marks[phase] = time.monotonic()
                run_phase(self.client, phase, self.parts, self.seen)
                self.marks["end " + phase] = time.monotonic()
        except BaseException as error:  # the kill: connection refused or reset
            self.error = error
        finally:
            self.client.close()


# --- after the restart -----------------------------------------------------------------------------------


def finish_phase(client: Client, phase: str, parts: int) -> tuple[bool, bool]:
    """The phase's operation (again, if its result is not there), then the graph brought up to date.

    (whether the operation had to be done, whether the graph had to be rebuilt)
    """
    done = False
    if phase == "ingest" and (client.status(C) or {}).get("status") != "indexed":
        client.upload("crane.md", long_document(parts))
        client.status_is(C, "indexed")
        done = True
    if phase == "delete" and (client.status(B) or {}).get("status") != "deleted":
        client.delete(B)
        client.status_is(B, "deleted")
        done = True
    return done, ensure_graph(client, 2 if phase == "delete" else 3)


def ensure_graph(client: Client, documents: int, grace_s: float = 30.0) -> bool:
    """Wait for the graph to be current; rebuild it (an admin's recovery) if no build gets it there."""
    try:
        client.until("graph", lambda: current(client.graph(), documents), deadline_s=grace_s)
        return False
    except TimeoutError:
        client.rebuild()
        client.graph_current(documents)
        return True


def new_server(root: Path, secret: str, batch: int) -> DevServer:
    workdir = root / "server"
    workdir.mkdir(parents=True)
    env = server_env(root / "data", secret, {"LIBRARIAN_UPSERT_BATCH_SIZE": str(batch)})
    return DevServer(workdir, env).start()


def index_ids(data_dir: Path) -> dict[str, set[str]]:
    from librarian.settings import load_settings
    from librarian.stack import Stack

    stack = Stack(load_settings(data_dir=data_dir))
    ids: dict[str, set[str]] = {}
    for rid in stack.index.list_ids(namespace=ORG):
        ids.setdefault(rid.rsplit(":", 1)[0], set()).add(rid)
    return ids


def clean_run(root: Path, secret: str, args: argparse.Namespace) -> dict[str, Any]:
    server = new_server(root / "clean", secret, args.batch)
    try:
        driver = Driver(server.url, secret, args.parts)
        driver.run()
        if driver.error:
            raise RuntimeError(f"the clean run failed: {driver.error!r}\n{server.log_tail()}")
        client = Client(server.url, secret)
        statuses = {p: view(client.status(p)) for p in (A, B, C)}
        graph = {k: client.graph()[k] for k in GRAPH_KEYS}
        client.close()
    finally:
        server.stop()
    durations = {p: driver.marks["end " + p] - driver.marks[p] for p in PHASES}
    ids = index_ids(root / "clean" / "data")
    return {"statuses": statuses, "graph": graph, "ids": ids, "phase_s": durations}


def kill_during(server: DevServer, driver: Driver, planned: str, delay: float) -> str:
    """SIGKILL the server `delay` seconds into `planned`; the phase in progress then ("none": all done)."""
    driver.start()
    while planned not in driver.marks and driver.is_alive():
        time.sleep(0.02)
    time.sleep(delay)
    server.kill()
    driver.join(timeout=60)
    started = [p for p in PHASES if p in driver.marks]
    return started[-1] if started and "end " + started[-1] not in driver.marks else "none"


def trial(root: Path, secret: str, args: argparse.Namespace, planned: str, delay: float) -> dict[str, Any]:
    server = new_server(root, secret, args.batch)
    try:
        driver = Driver(server.url, secret, args.parts)
        phase = kill_during(server, driver, planned, delay)
        started = time.monotonic()
        server.restart()
        restart_s = time.monotonic() - started
        client = Client(server.url, secret)
        first = {p: view(client.status(p)) for p in (A, B, C)}
        touched = {"ingest": C, "delete": B}.get(phase)
        answered = bool(driver.seen.pop("answered", False))  # the upload's or delete's 202/200
        kept = {p: first[p] == v for p, v in driver.seen.items() if p != touched}
        settled = client.settled()
        graph = client.graph()
        target = {"ingest": settled[C], "delete": settled[B]}.get(phase)
        if phase in ("ingest", "delete"):
            later = view(target)[0] if target else "no such document (404)"
        else:
            later = f"graph {graph['lastBuild']['status']}"
        if phase == "graph" and not graph["upToDate"]:
            later += " (not up to date)"
        repeated = rebuilt = False
        for n, rest in enumerate(PHASES[PHASES.index(phase) :] if phase != "none" else ()):
            done, graph_again = finish_phase(client, rest, args.parts)
            repeated |= done and n == 0
            rebuilt |= graph_again
        final = {p: view(client.status(p)) for p in (A, B, C)}
        final_graph = {k: client.graph()[k] for k in GRAPH_KEYS}
        client.close()
    finally:
        server.stop()
    return {
        "phase": phase,
        "restart_s": restart_s,
        "kept": kept,
        "later": later + (f" ({target['error']})" if target and target.get("error") else ""),
        "answered": answered,
        "repeated": repeated,
        "rebuilt": rebuilt,
        "final": final,
        "graph": final_graph,
        "ids": index_ids(root / "data"),
    }


def answered_by_request(results: list[dict[str, Any]]) -> str:
    """The same tally split by whether the request had been answered (202/200) before the kill."""
    answered = Counter(r["later"] for r in results if r["answered"])
    unanswered = Counter(r["later"] for r in results if not r["answered"])
    return f" (request answered before the kill: {dict(answered)}; not answered: {dict(unanswered)})"


def verdict(found: Any, expected: Any) -> str:
    return "equal" if found == expected else f"DIFFERENT {found}"


def report(clean: dict[str, Any], results: list[dict[str, Any]]) -> bool:
    n = len(results)
    equal = sum(r["final"] == clean["statuses"] for r in results)
    ids_equal = sum(r["ids"] == clean["ids"] for r in results)
    graph_equal = sum(r["graph"] == clean["graph"] for r in results)
    kept = [ok for r in results for ok in r["kept"].values()]
    print(f"\n{n} trials; killed during: {dict(Counter(r['phase'] for r in results))}")
    print(f"statuses final before the kill, read as before at the first read: {sum(kept)}/{len(kept)}")
    for phase in (*PHASES, "none"):
        mine = [r for r in results if r["phase"] == phase]
        if mine:
            print(
                f"killed during {phase}: read once settled {dict(Counter(r['later'] for r in mine))}"
                f"{answered_by_request(mine) if phase in ('ingest', 'delete') else ''}; "
                f"operation repeated by the client {sum(r['repeated'] for r in mine)}/{len(mine)}, "
                f"graph rebuilt by an admin {sum(r['rebuilt'] for r in mine)}/{len(mine)}"
            )
    print(f"every final status equal to the clean run's (status, chunks, hash): {equal}/{n}")
    print(f"index record ids per document equal to the clean run's: {ids_equal}/{n}")
    print(f"graph counts equal to the clean run's: {graph_equal}/{n}")
    restarts = sorted(r["restart_s"] for r in results)
    print(f"restart to ready: median {restarts[len(restarts) // 2]:.1f}s, max {restarts[-1]:.1f}s")
    return equal == n and ids_equal == n and all(kept)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--parts", type=int, default=120, help="size of C in chunks")
    parser.add_argument("--batch", type=int, default=2, help="LIBRARIAN_UPSERT_BATCH_SIZE")
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    secret = secrets.token_urlsafe(48)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clean = clean_run(root, secret, args)
        phase_s = ", ".join(f"{p} {s:.1f}s" for p, s in clean["phase_s"].items())
        print(f"clean run: {clean['statuses']}\n  phases: {phase_s}; graph {clean['graph']}", flush=True)
        results = []
        for n in range(args.trials):
            planned = PHASES[n % len(PHASES)]
            delay = rng.uniform(0, clean["phase_s"][planned])
            result = trial(root / f"trial{n}", secret, args, planned, delay)
            results.append(result)
            print(
                f"trial {n:2d}: {planned} +{delay:5.1f}s, killed during {result['phase']}"
                f"{' (request answered)' if result['answered'] else ''} -> "
                f"{result['later']}{', repeated' if result['repeated'] else ''}"
                f"{', graph rebuilt' if result['rebuilt'] else ''}; "
                f"kept {sum(result['kept'].values())}/{len(result['kept'])}; "
                f"final {verdict(result['final'], clean['statuses'])}; "
                f"ids {'equal' if result['ids'] == clean['ids'] else 'DIFFERENT'}; "
                f"graph {verdict(result['graph'], clean['graph'])}",
                flush=True,
            )
    return 0 if report(clean, results) else 1


if __name__ == "__main__":
    sys.exit(main())
