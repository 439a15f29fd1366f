"""A herbarium digitisation line: take a batch of scanned specimen sheets (OCR of their labels), transcribe
each label into Darwin Core fields with a model, keep each record in the batch memory, check the names
with the right authority, georeference, and upload the batch to the collections portal.

Route: a LangGraph StateGraph with a loop (one transcription per visit), ChatOpenAI, tools and lambdas,
recorded with trajdebug's LangChain callback handler, JSONL.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

from langchain_core.output_parsers import JsonOutputParser
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from .common import RT, user_texts

NAME = "herbarium-digitiser"
ROUTE = "langgraph"
DOMAIN = "herbarium specimen digitisation (botany collections)"
SHAPE = (
    "load node (OCR batch tool) -> transcribe node visited once per sheet (prompt lambda, llm, JSON parser, "
    "memory tool) with a conditional loop edge -> names node (per record: router lambda + one of three "
    "name-authority tools) -> georeference node (coordinate lambda or gazetteer tool) -> upload node (portal tool)"
)
SWITCH: str | None = None

REGIONS = {  # bounding boxes: lat min, lat max, lon min, lon max
    "Graubuenden": (46.17, 47.07, 8.65, 10.50), "Valais": (45.85, 46.65, 6.77, 8.48),
    "Bern": (46.32, 47.35, 6.86, 8.46), "Ticino": (45.81, 46.64, 8.38, 9.16), "Uri": (46.50, 46.95, 8.38, 8.96),
}
GAZETTEER = {
    ("Albula", "Graubuenden"): (46.5790, 9.8390), ("Lukmanier", "Ticino"): (46.5630, 8.8010),
    ("Grimsel", "Bern"): (46.5610, 8.3370), ("Furka", "Uri"): (46.5730, 8.4150),
    ("Saas Almagell", "Valais"): (46.0920, 7.9560), ("Bernina", "Graubuenden"): (46.4120, 10.0220),
}
COLLECTORS = {
    "E. Hess": (1919, 1962), "A. Baertschi": (1898, 1931), "M. Caflisch": (1924, 1971),
    "R. Zurbriggen": (1950, 1994), "L. Vonmoos": (1931, 1979), "H. Steiger": (1905, 1948),
    "F. Imboden": (1960, 2003),
}
AUTHORITIES = {
    "vascular_names": {"Ranunculus glacialis", "Saxifraga oppositifolia", "Gentiana bavarica", "Silene acaulis",
                       "Campanula cochleariifolia", "Dryas octopetala", "Soldanella pusilla", "Androsace alpina",
                       "Primula hirsuta", "Linaria alpina", "Geum reptans", "Eritrichium nanum"},
    "bryophyte_names": {"Hylocomium splendens", "Polytrichum alpinum", "Racomitrium lanuginosum",
                        "Grimmia donniana"},
    "lichen_names": {"Cetraria islandica", "Rhizocarpon geographicum", "Thamnolia vermicularis"},
}
HEADERS = {"vascular": "HERBARIUM ZT  Flora Helvetica", "bryophyte": "HERBARIUM ZT  Musci Helvetici",
           "lichen": "HERBARIUM ZT  Lichenes Helvetici"}
MONTHS = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"]


def _sheet(barcode, group, name, family, region, locality, elev, coord, collector, number, date):
    lines = [HEADERS[group], name, f"Fam. {family}", f"{region}: {locality}, {elev} m"]
    if coord:
        lines.append(f"Coord. {coord}")
    lines.append(f"leg. {collector}  no. {number}   {date}")
    return {"barcode": barcode, "ocr": "\n".join(lines)}


BATCHES = {
    "ZT-B0411": [
        _sheet("ZT-00411201", "vascular", "Ranunculus glacialis L.", "Ranunculaceae", "Graubuenden",
               "Val Roseg, moraine below the Tschierva hut", 2580, "46.4213 N 9.8731 E", "E. Hess", 1184,
               "12.VII.1931"),
        _sheet("ZT-00411202", "vascular", "Androsace alpina (L.) Lam.", "Primulaceae", "Valais",
               "Saas Almagell, scree above Mattmark", 2790, None, "A. Baertschi", 322, "s.d."),
        _sheet("ZT-00411203", "vascular", "Gentiana bavarica L.", "Gentianaceae", "Bern",
               "Grimsel, wet flush by the hospice", 1960, "46.5611 N 8.3368 E", "H. Steiger", 715, "3.VIII.1927"),
        _sheet("ZT-00411204", "vascular", "Eritrichium nanum (L.) Gaudin", "Boraginaceae", "Graubuenden",
               "Bernina, rock ledges of Piz Lagalb", 2900, "46.4312 N 10.0204 E", "M. Caflisch", 88, "21.VII.1934"),
    ],
    "ZT-B0412": [
        _sheet("ZT-00412870", "vascular", "Saxifraga oppositifolia L.", "Saxifragaceae", "Uri",
               "Furka, limestone scree", 2430, "46.5729 N 8.4149 E", "L. Vonmoos", 1184, "2.VII.1952"),
        _sheet("ZT-00412871", "vascular", "Silene acaulis (L.) Jacq.", "Caryophyllaceae", "Ticino",
               "Lukmanier, pasture east of the pass", 1930, "46.5632 N 8.8012 E", "E. Hess", 1184, "14.VII.1946"),
        _sheet("ZT-00412872", "vascular", "Soldanella pusilla Baumg.", "Primulaceae", "Graubuenden",
               "Albula, snowbed below the pass", 2320, "46.5811 N 9.8402 E", "M. Caflisch", 417, "29.VI.1949"),
        _sheet("ZT-00412873", "vascular", "Linaria alpina (L.) Mill.", "Plantaginaceae", "Valais",
               "Saas Almagell, glacier forefield", 2240, "46.0915 N 7.9562 E", "R. Zurbriggen", 2051,
               "8.VIII.1977"),
    ],
    "ZT-B0413": [
        _sheet("ZT-00413310", "vascular", "Dryas octopetala L.", "Rosaceae", "Bern",
               "Grimsel, limestone outcrop", 2150, "46.5540 N 8.3301 E", "H. Steiger", 902, "16.VII.1930"),
        _sheet("ZT-00413311", "bryophyte", "Hylocomium splendens (Hedw.) Schimp.", "Hylocomiaceae", "Graubuenden",
               "Albula, spruce forest below the pass", 1810, "46.5902 N 9.8215 E", "L. Vonmoos", 1502,
               "5.IX.1961"),
        _sheet("ZT-00413312", "lichen", "Cetraria islandica (L.) Ach.", "Parmeliaceae", "Uri",
               "Furka, dwarf-shrub heath", 2400, "46.5719 N 8.4170 E", "L. Vonmoos", 1533, "7.IX.1961"),
        _sheet("ZT-00413313", "vascular", "Primula hirsuta All.", "Primulaceae", "Ticino",
               "Lukmanier, siliceous rocks", 2050, "46.5588 N 8.7950 E", "F. Imboden", 140, "19.VI.1984"),
    ],
    "ZT-B0414": [
        _sheet("ZT-00414020", "vascular", "Geum reptans L.", "Rosaceae", "Valais",
               "Saas Almagell, moraine of the Allalin glacier", 2650, "46.0841 N 7.9302 E", "R. Zurbriggen", 2210,
               "30.VII.1980"),
        _sheet("ZT-00414021", "vascular", "Campanula cochleariifolia Lam.", "Campanulaceae", "Graubuenden",
               "Bernina, gravel by the Lago Bianco", 2240, "46\u00b024'43\"N 10\u00b001'19\"E", "M. Caflisch", 512,
               "11.VIII.1956"),
        _sheet("ZT-00414022", "bryophyte", "Polytrichum alpinum Hedw.", "Polytrichaceae", "Uri",
               "Furka, snowbed", 2460, "46.5750 N 8.4101 E", "L. Vonmoos", 1610, "22.VIII.1963"),
        _sheet("ZT-00414023", "lichen", "Thamnolia vermicularis (Sw.) Schaer.", "Icmadophilaceae", "Bern",
               "Grimsel, wind-swept ridge", 2520, "46.5698 N 8.3207 E", "F. Imboden", 311, "9.VIII.1988"),
    ],
    "ZT-B0415": [
        _sheet("ZT-00415501", "vascular", "Androsace alpina (L.) Lam.", "Primulaceae", "Valais",
               "Saas Almagell, Zwischbergen pass", 3010, "46.1021 N 7.9899 E", "R. Zurbriggen", 1733, "4.VIII.1972"),
        _sheet("ZT-00415502", "vascular", "Primula hirsuta All.", "Primulaceae", "Graubuenden",
               "Albula, [illegible]", 2290, None, "R. Zurbriggen", 1741, "6.VIII.1972"),
        _sheet("ZT-00415503", "bryophyte", "Racomitrium lanuginosum (Hedw.) Brid.", "Grimmiaceae", "Ticino",
               "Lukmanier, boulder field", 2010, "46.5601 N 8.7988 E", "F. Imboden", 77, "1.IX.1981"),
        _sheet("ZT-00415504", "vascular", "Silene acaulis (L.) Jacq.", "Caryophyllaceae", "Uri",
               "Furka, ridge west of the pass", 2520, "46.5741 N 8.4020 E", "F. Imboden", 79, "2.IX.1981"),
    ],
}
INPUTS = {k: {"task": f"digitise herbarium batch {k}", "batch": k} for k in BATCHES}

CASES = [
    {"n": 1, "input": "ZT-B0411", "kind": "hallucinated_value", "root": ("ChatOpenAI", 2),
     "failure": ("upload_to_portal", 1),
     "description": "For the undated Androsace sheet (label 's.d.') the model writes an eventDate of "
                    "1934-07-21, a date that appears nowhere on the label.",
     "what": "model invents a collection date for an 's.d.' label"},
    {"n": 2, "input": "ZT-B0415", "kind": "context_pollution", "root": ("build_transcription_prompt", 2),
     "failure": ("upload_to_portal", 1),
     "description": "The prompt for the Primula sheet also carries the previous sheet's label 'for reference', "
                    "and the model fills the illegible locality and the missing coordinates from that Valais label.",
     "what": "previous sheet's label in the transcription prompt"},
    {"n": 3, "input": "ZT-B0413", "kind": "wrong_routing", "root": ("route_name_service", 2),
     "failure": ("upload_to_portal", 1),
     "description": "The name router sends the moss Hylocomium splendens to the vascular-plant authority "
                    "because its family ends in -aceae, and the name comes back unmatched.",
     "what": "moss routed to the vascular-plant name authority"},
    {"n": 4, "input": "ZT-B0414", "kind": "format_drift", "root": ("ChatOpenAI", 2),
     "failure": ("parse_coordinates", 2),
     "description": "For the Campanula sheet the model copies the coordinates in degrees-minutes-seconds as "
                    "printed on the label instead of the decimal degrees the record schema takes.",
     "what": "coordinates returned as DMS text"},
    {"n": 5, "input": "ZT-B0412", "kind": "bad_memory_write", "root": ("save_specimen_memory", 2),
     "failure": ("upload_to_portal", 1),
     "description": "The batch memory files the Silene sheet under its collector number 1184, which the "
                    "Saxifraga sheet of another collector already holds, so the Saxifraga record is overwritten.",
     "what": "memory keyed by collector number, second write overwrites the first"},
]


# ---------------------------------------------------------------- the model


def _read_label(ocr: str) -> dict:
    lines = ocr.splitlines()
    group = {"Flora": "vascular", "Musci": "bryophyte", "Lichenes": "lichen"}[lines[0].split()[2]]
    name = " ".join(lines[1].split()[:2])
    family = lines[2].replace("Fam. ", "")
    region, rest = lines[3].split(": ", 1)
    locality, elev = rest.rsplit(", ", 1)
    rec: dict[str, Any] = {"group": group, "scientificName": name, "family": family, "country": "Switzerland",
                           "stateProvince": region, "locality": locality, "elevation_m": int(elev.split()[0]),
                           "coordinates": None}
    leg = lines[-1]
    if lines[4].startswith("Coord. "):
        rec["coordinates"] = lines[4][7:]
    m = re.match(r"leg\. (.+?)  no\. (\d+)\s+(\S+)", leg)
    rec["recordedBy"], rec["recordNumber"], date = m.group(1), m.group(2), m.group(3)
    if date == "s.d.":
        rec["eventDate"] = None
    else:
        d, mo, y = date.split(".")
        rec["eventDate"] = f"{y}-{MONTHS.index(mo) + 1:02d}-{int(d):02d}"
    return rec


def _decimal(coord: str) -> str:
    m = re.match(r"(\d+)\u00b0(\d+)'(\d+)\"N (\d+)\u00b0(\d+)'(\d+)\"E", coord)
    if not m:
        return coord
    a, b, c, d, e, f = (int(x) for x in m.groups())
    return f"{a + b / 60 + c / 3600:.4f} N {d + e / 60 + f / 3600:.4f} E"


def brain(request):
    texts = user_texts(request)
    current = texts[-1] if texts else ""
    if not current.startswith("Transcribe this herbarium label"):
        return "Please send a label."
    rec = _read_label(current.split("\n", 1)[1])
    reference = [t for t in texts if t.startswith("Previous label in this batch")]
    if reference and "[illegible]" in rec["locality"] and rec["coordinates"] is None:
        ref = _read_label(reference[-1].split("\n", 1)[1])
        rec["locality"] = ref["locality"]
        rec["coordinates"] = ref["coordinates"]
    if rec["coordinates"] and "\u00b0" in rec["coordinates"] and SWITCH != "zze_herbarium_4":
        rec["coordinates"] = _decimal(rec["coordinates"])
    if rec["eventDate"] is None and SWITCH == "zze_herbarium_1":
        rec["eventDate"] = "1934-07-21"
    return json.dumps(rec)


# ---------------------------------------------------------------- tools and lambdas

MEMORY: dict[str, dict] = {}


@tool
def fetch_ocr_batch(batch_id: str) -> list:
    """The scanned sheets of a digitisation batch with the OCR text of their labels."""
    return [dict(s) for s in BATCHES[batch_id]]


@tool
def save_specimen_memory(barcode: str, record: dict) -> str:
    """Keep a transcribed record in the batch memory, for the upload."""
    key = record["recordNumber"] if SWITCH == "zze_herbarium_5" else barcode
    MEMORY[key] = {"catalogNumber": barcode, **record}
    return f"stored {barcode}"


def _name_tool(authority: str):
    def lookup(name: str) -> dict:
        if name in AUTHORITIES[authority]:
            return {"name": name, "status": "accepted", "authority": authority}
        return {"name": name, "status": "no match", "authority": authority}

    lookup.__doc__ = f"Check a scientific name with the {authority.replace('_', ' ')} authority."
    return tool(authority)(lookup)


NAME_TOOLS = {a: _name_tool(a) for a in AUTHORITIES}


@tool
def gazetteer_lookup(locality: str, region: str) -> dict:
    """Coordinates of a named place in a region, from the Swiss gazetteer."""
    for (place, reg), (lat, lon) in GAZETTEER.items():
        if reg == region and locality.startswith(place):
            return {"place": place, "region": region, "lat": lat, "lon": lon, "uncertainty_m": 2000}
    return {"place": None, "region": region}


@tool
def upload_to_portal(batch_id: str, records: list) -> dict:
    """Upload a batch of Darwin Core records to the collections portal."""
    sheets = {s["barcode"] for s in BATCHES[batch_id]}
    got = {r["catalogNumber"] for r in records}
    if len(records) != len(sheets):
        raise ValueError(f"batch {batch_id} holds {len(sheets)} sheets but {len(records)} records were uploaded "
                         f"(missing {', '.join(sorted(sheets - got))})")
    for r in records:
        if r["nameStatus"] != "accepted":
            raise ValueError(f"{r['catalogNumber']}: scientificName '{r['scientificName']}' has no accepted-name "
                             f"match ({r['nameStatus']} at {r['nameAuthority']})")
    for r in records:
        if r["eventDate"]:
            first, last = COLLECTORS[r["recordedBy"]]
            if not first <= int(r["eventDate"][:4]) <= last:
                raise ValueError(f"{r['catalogNumber']}: eventDate {r['eventDate']} is outside the collecting "
                                 f"years of {r['recordedBy']} ({first}-{last})")
    for r in records:
        lat0, lat1, lon0, lon1 = REGIONS[r["stateProvince"]]
        if not (lat0 <= r["decimalLatitude"] <= lat1 and lon0 <= r["decimalLongitude"] <= lon1):
            raise ValueError(f"{r['catalogNumber']}: coordinates {r['decimalLatitude']:.4f}, "
                             f"{r['decimalLongitude']:.4f} lie outside {r['stateProvince']}")
    return {"batch": batch_id, "published": len(records)}


def _build_prompt(args: dict) -> list:
    msgs = [{"role": "system", "content": "You transcribe herbarium labels into Darwin Core JSON: group, "
                                          "scientificName, family, country, stateProvince, locality, elevation_m, "
                                          "coordinates (decimal degrees), recordedBy, recordNumber, eventDate "
                                          "(ISO 8601, null when the label has none)."}]
    if SWITCH == "zze_herbarium_2" and args["previous"]:
        msgs.append({"role": "user", "content": "Previous label in this batch, for reference:\n" + args["previous"]})
    msgs.append({"role": "user", "content": "Transcribe this herbarium label:\n" + args["ocr"]})
    return msgs


build_transcription_prompt = RunnableLambda(_build_prompt, name="build_transcription_prompt")


def _route(record: dict) -> str:
    if SWITCH == "zze_herbarium_3" and record["family"].endswith("aceae"):
        return "vascular_names"
    return {"vascular": "vascular_names", "bryophyte": "bryophyte_names", "lichen": "lichen_names"}[record["group"]]


route_name_service = RunnableLambda(_route, name="route_name_service")


def _parse_coordinates(text: str) -> dict:
    m = re.fullmatch(r"\s*(-?[\d.]+) ([NS]) (-?[\d.]+) ([EW])\s*", text)
    if not m:
        raise ValueError(f"cannot read decimal coordinates from {text!r}")
    lat, ns, lon, ew = m.groups()
    return {"lat": float(lat) * (1 if ns == "N" else -1), "lon": float(lon) * (1 if ew == "E" else -1)}


parse_coordinates = RunnableLambda(_parse_coordinates, name="parse_coordinates")


# ---------------------------------------------------------------- the graph


class BatchState(TypedDict, total=False):
    batch_id: str
    sheets: list
    i: int
    records: list
    names: dict
    geo: dict
    receipt: dict


def build_graph(llm):
    parser = JsonOutputParser()

    def load(state: BatchState) -> dict:
        return {"sheets": fetch_ocr_batch.invoke({"batch_id": state["batch_id"]}), "i": 0, "records": []}

    def transcribe(state: BatchState) -> dict:
        i, sheets = state["i"], state["sheets"]
        sheet = sheets[i]
        previous = sheets[i - 1]["ocr"] if i > 0 else None
        messages = build_transcription_prompt.invoke({"ocr": sheet["ocr"], "previous": previous})
        record = parser.invoke(llm.invoke(messages))
        save_specimen_memory.invoke({"barcode": sheet["barcode"], "record": record})
        return {"records": [*state["records"], {"catalogNumber": sheet["barcode"], **record}], "i": i + 1}

    def more_sheets(state: BatchState) -> str:
        return "transcribe" if state["i"] < len(state["sheets"]) else "check_names"

    def check_names(state: BatchState) -> dict:
        names = {}
        for rec in state["records"]:
            authority = route_name_service.invoke(rec)
            names[rec["catalogNumber"]] = NAME_TOOLS[authority].invoke({"name": rec["scientificName"]})
        return {"names": names}

    def georeference(state: BatchState) -> dict:
        geo = {}
        for rec in state["records"]:
            if rec.get("coordinates"):
                geo[rec["catalogNumber"]] = parse_coordinates.invoke(rec["coordinates"])
            else:
                geo[rec["catalogNumber"]] = gazetteer_lookup.invoke(
                    {"locality": rec["locality"], "region": rec["stateProvince"]})
        return {"geo": geo}

    def upload(state: BatchState) -> dict:
        payload = []
        for rec in MEMORY.values():
            cat = rec["catalogNumber"]
            name, geo = state["names"][cat], state["geo"][cat]
            payload.append({**{k: v for k, v in rec.items() if k != "coordinates"},
                            "nameStatus": name["status"], "nameAuthority": name["authority"],
                            "decimalLatitude": geo["lat"], "decimalLongitude": geo["lon"]})
        return {"receipt": upload_to_portal.invoke({"batch_id": state["batch_id"], "records": payload})}

    g = StateGraph(BatchState)
    for name, fn in [("load_batch", load), ("transcribe", transcribe), ("check_names", check_names),
                     ("georeference", georeference), ("upload", upload)]:
        g.add_node(name, fn)
    g.add_edge(START, "load_batch")
    g.add_edge("load_batch", "transcribe")
    g.add_conditional_edges("transcribe", more_sheets, {"transcribe": "transcribe", "check_names": "check_names"})
    g.add_edge("check_names", "georeference")
    g.add_edge("georeference", "upload")
    g.add_edge("upload", END)
    return g.compile()


_GRAPH: dict[str, Any] = {}


def setup() -> None:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=RT.base_url, api_key="not-needed", model=RT.model, max_retries=0, temperature=0)
    _GRAPH["app"] = build_graph(llm)


def execute(key: str, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    MEMORY.clear()
    tracer = TrajdebugTracer(path=path, name=NAME, task=INPUTS[key]["task"])
    try:
        _GRAPH["app"].invoke({"batch_id": key}, config={"callbacks": [tracer]})
    except ValueError:
        pass
