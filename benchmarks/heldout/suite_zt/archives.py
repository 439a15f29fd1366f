"""Archives digitisation: plan and ingest a scanning batch for one accession (trajdebug SDK)."""
from __future__ import annotations

import json

import trajdebug

from .common import Case, last_user, openai_client, policy, sdk_chat
from .kit import active

AGENT, ROUTE, DOMAIN = "archives-digitiser", "sdk", "archives digitisation"
SHAPE = "accession -> per-box manifest loop (retry) -> LLM capture plan -> QC sub-agent -> ingest"
MODEL = "zt-archives"

ACCESSIONS = {
    "ACC-2291": {"title": "Parish registers 1820-1890", "boxes": 4, "condition": "fragile", "rights": "restricted"},
    "ACC-3050": {"title": "Harbour board minutes", "boxes": 3, "condition": "stable", "rights": "open"},
    "ACC-1107": {"title": "Mill ledgers", "boxes": 2, "condition": "stable", "rights": "open"},
    "ACC-1410": {"title": "School log books", "boxes": 3, "condition": "fragile", "rights": "restricted"},
    "ACC-2604": {"title": "Land survey field books", "boxes": 2, "condition": "fragile", "rights": "open"},
    "ACC-2988": {"title": "Choral society programmes", "boxes": 3, "condition": "stable", "rights": "open"},
}
SCANNERS = ["SC-02", "SC-05", "SC-07"]
REFS = ["ACC-1107", "ACC-1410", "ACC-2604", "ACC-2988"]


def _folders(acc: str, box: int) -> list[tuple[str, str]]:
    seed = sum(map(ord, acc)) + box * 7
    rows = []
    for f in range(1, 4):
        pages = 40 + (seed * f) % 37
        rows.append((f"B{box}-F{f:02d}", f"{pages}+2" if (f + box) % 3 == 0 else str(pages)))
    return rows


def _true_pages(acc: str) -> int:
    total = 0
    for b in range(1, ACCESSIONS[acc]["boxes"] + 1):
        for _, p in _folders(acc, b):
            total += sum(int(x) for x in p.split("+"))
    return total


@policy(MODEL)
def _model(msgs):
    req = json.loads(last_user(msgs))
    ppi = 400 if req["condition"] == "fragile" else 300
    scanner = req["available_scanners"][0]
    if active("arch_halluc"):
        scanner = "SC-11"
    return json.dumps({"ppi": ppi, "colour": "24-bit", "scanner": scanner, "format": "TIFF"})


@trajdebug.step(kind="tool")
def fetch_accession(acc: str) -> str:
    a = ACCESSIONS[acc]
    return f"{acc}|{a['title']}|boxes={a['boxes']}|condition={a['condition']}|rights={a['rights']}"


@trajdebug.step(kind="parse")
def parse_accession(text: str) -> dict:
    acc, title, *kv = text.split("|")
    rec = {"accession": acc, "title": title}
    for item in kv:
        k, v = item.split("=")
        rec[k] = int(v) if v.isdigit() else v
    return rec


@trajdebug.step(kind="state")
def remember_collection(rec: dict) -> None:
    rights = rec["rights"]
    if active("arch_memory"):
        rights = "open"
    trajdebug.current_run().state["collection"] = {"accession": rec["accession"], "rights": rights,
                                                   "boxes": rec["boxes"], "condition": rec["condition"]}


_flaky = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_box_manifest(acc: str, box: int) -> str:
    if box == 2 and _flaky["n"] == 0:
        _flaky["n"] += 1
        raise ConnectionError("box catalogue service reset the connection")
    try:
        if box == 3 and active("arch_swallow"):
            raise TimeoutError("box catalogue read timed out after 10 s")
        return "\n".join(["folder,pages"] + [f"{f},{p}" for f, p in _folders(acc, box)])
    except TimeoutError:
        return "folder,pages"


@trajdebug.step(kind="parse")
def parse_manifest(text: str) -> list[dict]:
    rows = []
    for line in text.splitlines()[1:]:
        folder, pages = line.split(",")
        if "+" in pages:
            if active("arch_lossy"):
                n = int(pages.split("+")[0])
            else:
                n = sum(int(x) for x in pages.split("+"))
        else:
            n = int(pages)
        rows.append({"folder": folder, "pages": n})
    return rows


@trajdebug.step(kind="other")
def estimate_storage(folders: list[dict], plan: dict) -> dict:
    pages = sum(f["pages"] for f in folders)
    mb = {300: 25.0, 400: 44.0, 600: 99.0}[plan["ppi"]]
    return {"pages": pages, "storage_gb": round(pages * mb / 1024, 2)}


@trajdebug.step(kind="tool")
def reserve_scanner(scanner: str, pages: int) -> dict:
    return {"reservation": f"R-{pages % 97:02d}{scanner[-2:]}", "scanner": scanner, "hours": round(pages / 180, 1)}


@trajdebug.step(kind="other")
def pick_samples(folders: list[dict]) -> list[str]:
    return [f["folder"] for f in folders[::3]]


@trajdebug.step(kind="tool")
def check_sample(folder: str) -> dict:
    return {"folder": folder, "delta_e": 1.8, "resolution_ok": True}


@trajdebug.step(kind="agent")
def qc_review(folders: list[dict]) -> dict:
    samples = pick_samples(folders)
    results = [check_sample(f) for f in samples]
    return {"sampled": len(results), "passed": all(r["resolution_ok"] for r in results)}


@trajdebug.step(kind="other")
def build_ingest_package(folders: list[dict], size: dict, booking: dict, qc: dict) -> dict:
    collection = trajdebug.current_run().state["collection"]
    start = 0 if active("arch_seq") else 1
    files = []
    n = start
    for f in folders:
        for _ in range(f["pages"]):
            files.append(f"img_{n:05d}.tif")
            n += 1
    return {"accession": collection["accession"], "rights": collection["rights"], "pages": size["pages"],
            "first_file": files[0], "last_file": files[-1], "file_count": len(files),
            "device": booking["scanner"], "qc": qc}


@trajdebug.step(kind="tool")
def submit_ingest(package: dict) -> dict:
    acc = package["accession"]
    expected = _true_pages(acc)
    if package["pages"] != expected:
        raise ValueError(f"HTTP 422 from repository ingest: page total {package['pages']} does not match "
                         f"the capture log count {expected} for {acc}")
    if package["rights"] != ACCESSIONS[acc]["rights"]:
        raise PermissionError(f"HTTP 403 from repository ingest: rights statement '{package['rights']}' "
                              f"conflicts with the donor agreement for {acc}")
    if package["device"] not in SCANNERS:
        raise ValueError(f"HTTP 400 from repository ingest: capture device {package['device']} "
                         f"is not in the site device registry")
    if package["first_file"] != "img_00001.tif" or package["last_file"] != f"img_{package['file_count']:05d}.tif":
        raise ValueError(f"HTTP 422 from repository ingest: image sequence must run img_00001.tif.."
                         f"img_{package['file_count']:05d}.tif, got {package['first_file']}..{package['last_file']}")
    return {"status": "accepted", "ingest_id": f"ING-{acc[-4:]}"}


def record(path, acc: str, fault_id: str | None) -> None:
    from .kit import planted
    _flaky["n"] = 0
    client = openai_client()
    with planted(fault_id):
        try:
            with trajdebug.run(AGENT, task=f"digitise accession {acc}", path=str(path)) as run:
                run.state["collection"] = {}
                rec = parse_accession(fetch_accession(acc))
                remember_collection(rec)
                folders: list[dict] = []
                for box in range(1, rec["boxes"] + 1):
                    folders.extend(parse_manifest(fetch_box_manifest(acc, box)))
                ask = {"accession": acc, "condition": rec["condition"], "available_scanners": SCANNERS[:2],
                       "folders": len(folders)}
                plan = json.loads(sdk_chat(client, "plan_capture", MODEL, [
                    {"role": "system", "content": "You plan archival capture: ppi, colour, scanner, format. JSON."},
                    {"role": "user", "content": json.dumps(ask)}]))
                size = estimate_storage(folders, plan)
                booking = reserve_scanner(plan["scanner"], size["pages"])
                qc = qc_review(folders)
                package = build_ingest_package(folders, size, booking, qc)
                submit_ingest(package)
        except Exception:
            pass


CASES = [
    Case("zt_archives_1", "arch_lossy", "lossy_parsing", "ACC-2291", "parse_manifest", 1, "submit_ingest", 1,
         "The manifest parser keeps only the first number of a folder's '40+2' page count, dropping fold-out pages."),
    Case("zt_archives_2", "arch_memory", "bad_memory_write", "ACC-2291", "remember_collection", 1, "submit_ingest", 1,
         "The collection memory records the accession's rights as open though the accession record says restricted."),
    Case("zt_archives_3", "arch_halluc", "hallucinated_value", "ACC-3050", "plan_capture", 1, "submit_ingest", 1,
         "The capture planner names scanner SC-11, which is not among the scanners it was offered."),
    Case("zt_archives_4", "arch_swallow", "swallowed_error", "ACC-3050", "fetch_box_manifest", 4, "submit_ingest", 1,
         "The box 3 manifest read times out and the tool returns an empty manifest instead of raising."),
    Case("zt_archives_5", "arch_seq", "off_by_one", "ACC-2291", "build_ingest_package", 1, "submit_ingest", 1,
         "The ingest package numbers image files from 0 instead of 1."),
]
