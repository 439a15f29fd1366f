"""Reptile rescue: an intake agent for a reptile rescue centre, traced with OpenTelemetry (route: otlp).

Reads the surrender form and the keepers' recent notes, has a model triage the animals (species,
count, venom status), parses the triage, scans each animal for a microchip, fetches each
species' care sheet and has a model turn it into housing needs, runs a housing sub-agent
(enclosure board, one reservation per animal), schedules quarantine and the vet check, has a
model write the intake summary and checks the intake against the centre's rules.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import common
import kit
from openai import OpenAI


NAME = "reptile-rescue-intake"
ROUTE = "otlp"
DOMAIN = "reptile rescue"
SHAPE = (
    "OTLP spans: form tool, keeper-notes tool, model triage + parser, microchip tool per animal, care-sheet "
    "tool + model housing needs per species, housing sub-agent (enclosure board, reservation per animal), "
    "quarantine schedule, vet booking tool, model summary, validator"
)

QUARANTINE_DAYS = 30
CARE_SHEET_LIMIT = 2000

# The centre's species register: venomous, needs UVB, basking C, humidity %, enclosure class.
SPECIES = {
    "Python regius": {
        "common": "royal python",
        "venomous": False,
        "uvb": False,
        "basking_c": 32,
        "humidity": 60,
        "class": "snake-m",
    },
    "Pogona vitticeps": {
        "common": "bearded dragon",
        "venomous": False,
        "uvb": True,
        "basking_c": 40,
        "humidity": 35,
        "class": "lizard-arid",
    },
    "Pantherophis guttatus": {
        "common": "corn snake",
        "venomous": False,
        "uvb": False,
        "basking_c": 30,
        "humidity": 50,
        "class": "snake-s",
    },
    "Testudo hermanni": {
        "common": "Hermann's tortoise",
        "venomous": False,
        "uvb": True,
        "basking_c": 35,
        "humidity": 50,
        "class": "tortoise",
    },
    "Eublepharis macularius": {
        "common": "leopard gecko",
        "venomous": False,
        "uvb": False,
        "basking_c": 32,
        "humidity": 35,
        "class": "lizard-arid",
    },
    "Chamaeleo calyptratus": {
        "common": "veiled chameleon",
        "venomous": False,
        "uvb": True,
        "basking_c": 35,
        "humidity": 70,
        "class": "arboreal",
    },
    "Naja kaouthia": {
        "common": "monocled cobra",
        "venomous": True,
        "uvb": False,
        "basking_c": 31,
        "humidity": 60,
        "class": "venomous",
    },
}


def _care_sheet(latin: str) -> str:
    sp = SPECIES[latin]
    lighting = (
        "Lighting: a T5 10-12% UVB tube across two thirds of the enclosure, 12 hours a day, replaced every "
        "12 months."
        if sp["uvb"]
        else "Lighting: a day-night cycle from ambient light; UVB optional."
    )
    return (
        f"CARE SHEET - {latin} ({sp['common']}).\n"
        f"Housing: {sp['class']} enclosure, secure lid, hides at both ends, water bowl large enough to soak.\n"
        f"Heat: basking spot {sp['basking_c']} C with a thermostat-controlled heat source; cool end 24-26 C; "
        f"night drop to 20-22 C.\n"
        f"Humidity: around {sp['humidity']}%, a humid hide during shedding; misting as needed.\n"
        f"Diet: species-appropriate; weigh weekly during quarantine and record in the log.\n"
        f"Handling: {'hook and tube only, two licensed handlers' if sp['venomous'] else 'calm, supported, short sessions'}.\n"
        f"Health: check for mites, retained shed, stomatitis and respiratory signs before leaving quarantine.\n"
        f"{lighting}"
    )


# Enclosure board: id -> (class, occupant or None).  LIVE is now; SNAPSHOT is last night's export.
BOARD_LIVE = {
    "Q-01": ("snake-m", "RR-0390"),
    "Q-02": ("snake-m", "RR-0398"),
    "Q-03": ("snake-m", "RR-0412"),
    "Q-04": ("snake-m", None),
    "Q-05": ("snake-s", None),
    "Q-06": ("snake-s", None),
    "Q-07": ("lizard-arid", None),
    "Q-08": ("lizard-arid", "RR-0405"),
    "Q-09": ("lizard-arid", None),
    "Q-10": ("tortoise", None),
    "Q-11": ("tortoise", None),
    "Q-12": ("arboreal", None),
    "Q-13": ("arboreal", None),
    "V-01": ("venomous", None),
    "Q-14": ("lizard-arid", None),
    "Q-15": ("snake-m", None),
}
BOARD_SNAPSHOT = {**BOARD_LIVE, "Q-03": ("snake-m", None)}  # RR-0412 moved in this morning

# Keeper notes: the notes on the surrender and, in the desk's recent list, the last intake's notes.
RECENT_NOTES_OTHER = ["RR-0412 (Naja kaouthia): venomous - DWA licence holders only, hook and tube, room V."]


def _form(ref: str, owner: str, when: str, animals: list[tuple[str, str, int]], note: str) -> dict[str, Any]:
    lines = [f"{n} x {common_name} ({latin})" for latin, common_name, n in animals]
    return {
        "intake": ref,
        "owner": owner,
        "date": when,
        "animals": sum(n for _, _, n in animals),
        "species": [{"latin": latin, "count": n} for latin, _c, n in animals],
        "text": f"Surrender {ref} from {owner} on {when}: " + "; ".join(lines) + f". Owner says: {note}",
        "keeper_notes": [f"{ref}: owner reports {note.lower()}"],
    }


INPUTS: dict[str, dict[str, Any]] = {
    "hollis": _form(
        "RR-0431",
        "Dean Hollis",
        "2026-05-12",
        [("Python regius", "royal python", 2)],
        "Both eating well, shed last month.",
    ),
    "okonkwo": _form(
        "RR-0433",
        "Ada Okonkwo",
        "2026-05-13",
        [("Pantherophis guttatus", "corn snake", 1)],
        "Escaped once, very calm.",
    ),
    "marsh": _form(
        "RR-0436",
        "Gail Marsh",
        "2026-05-14",
        [("Pogona vitticeps", "bearded dragon", 1), ("Eublepharis macularius", "leopard gecko", 1)],
        "Dragon has been lethargic.",
    ),
    "petrov": _form(
        "RR-0438",
        "Ivan Petrov",
        "2026-05-14",
        [("Python regius", "royal python", 1), ("Pantherophis guttatus", "corn snake", 1)],
        "Moving abroad.",
    ),
    "whitfield": _form(
        "RR-0440",
        "Sue Whitfield",
        "2026-05-15",
        [("Testudo hermanni", "Hermann's tortoise", 2)],
        "Came with the house.",
    ),
    "kaur": _form(
        "RR-0421",
        "Jas Kaur",
        "2026-05-06",
        [("Eublepharis macularius", "leopard gecko", 2)],
        "Fine, just too many.",
    ),
    "lowe": _form(
        "RR-0424",
        "Ben Lowe",
        "2026-05-07",
        [("Chamaeleo calyptratus", "veiled chameleon", 1)],
        "Eyes a bit sunken.",
    ),
    "duarte": _form(
        "RR-0426",
        "Rita Duarte",
        "2026-05-08",
        [("Python regius", "royal python", 1), ("Testudo hermanni", "Hermann's tortoise", 1)],
        "Allergic child at home.",
    ),
    "brandt": _form(
        "RR-0428",
        "Nils Brandt",
        "2026-05-09",
        [("Pogona vitticeps", "bearded dragon", 2)],
        "Bred by accident, both young.",
    ),
}
REFS = ["kaur", "lowe", "duarte", "brandt"]

CASES = [
    {
        "id": "reptiles-count",
        "input": "hollis",
        "kind": "lossy_parsing",
        "root": ("parse_triage", 1),
        "failure": ("validate_intake", 1),
        "description": "parse_triage reads each species line with a pattern that drops the trailing ' x2', so the two "
        "royal pythons become one animal and get one enclosure.",
    },
    {
        "id": "reptiles-notes",
        "input": "okonkwo",
        "kind": "context_pollution",
        "root": ("keeper_notes", 1),
        "failure": ("validate_intake", 1),
        "description": "keeper_notes returns the desk's recent list with the last intake's cobra note in it, and the "
        "triage model marks the corn snake venomous, so it is housed in the venomous room V-01.",
    },
    {
        "id": "reptiles-uvb",
        "input": "marsh",
        "kind": "truncated_result",
        "root": ("care_sheet", 1),
        "failure": ("validate_intake", 1),
        "description": "The bearded dragon's care sheet comes back cut at 500 characters, before its lighting line, so "
        "the housing needs carry no UVB.",
    },
    {
        "id": "reptiles-board",
        "input": "petrov",
        "kind": "stale_data",
        "root": ("enclosure_board", 1),
        "failure": ("validate_intake", 1),
        "description": "The enclosure board is read from last night's export, where Q-03 is still empty, so the royal "
        "python is reserved into Q-03, which RR-0412 moved into this morning (Q-04 is free).",
    },
    {
        "id": "reptiles-quarantine",
        "input": "whitfield",
        "kind": "off_by_one",
        "root": ("schedule_quarantine", 1),
        "failure": ("validate_intake", 1),
        "description": "schedule_quarantine ends quarantine on intake date + 29 days (counting the intake day as day "
        "one), one day short of the 30-day rule.",
    },
]


# -- the scripted model ------------------------------------------------------------------------------------------------


def brain(request: Any) -> str:
    system, prompt = common.system_text(request), common.last_user(request)
    if system.startswith("You triage reptile surrenders"):
        form = common.payload(prompt, "FORM")
        notes = common.payload(prompt, "NOTES")
        text = " ".join(notes)
        lines = []
        for sp in form["species"]:
            venomous = (
                "yes" if ("venomous" in text and SPECIES[sp["latin"]]["class"].startswith("snake")) else "no"
            )
            lines.append(f"Species: {sp['latin']} x{sp['count']} | venomous: {venomous}")
        return "\n".join(lines) + "\nCondition: stable, no visible injuries."
    if system.startswith("You read care sheets"):
        sheet = prompt.split("SHEET:\n", 1)[1]
        needs = {
            "basking_c": int(re.search(r"basking spot (\d+) C", sheet).group(1)),
            "humidity": int(re.search(r"around (\d+)%", sheet).group(1)),
            "uvb": "UVB tube" in sheet,
            "class": re.search(r"Housing: (\S+) enclosure", sheet).group(1),
        }
        return json.dumps(needs)
    if system.startswith("You write intake summaries"):
        intake = common.payload(prompt, "INTAKE")
        return (
            f"Intake {intake['intake']}: {intake['animals']} animal(s) housed in "
            f"{', '.join(r['enclosure'] for r in intake['reservations'])}; quarantine ends {intake['quarantine_end']}."
        )
    return ""


# -- the agent ---------------------------------------------------------------------------------------------------------

OT = common.Otlp(NAME)
client: OpenAI | None = None


def _ask(system: str, prompt: str) -> str:
    reply = client.chat.completions.create(
        model=common.MODEL,
        temperature=0,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
    )
    return reply.choices[0].message.content


def housing_agent(animals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with OT.span("housing_agent", "AGENT", {"animals": animals}) as agent:
        with OT.span("enclosure_board", "TOOL", {"site": "main"}, **{"tool.name": "enclosure_board"}) as s:
            board = BOARD_SNAPSHOT if kit.on("reptiles-board") else BOARD_LIVE
            exported = "2026-05-13T22:00" if kit.on("reptiles-board") else "2026-05-14T09:12"
            free = s.output(
                {
                    "as_of": exported,
                    "free": [
                        {"enclosure": e, "class": c} for e, (c, who) in sorted(board.items()) if who is None
                    ],
                }
            )
        taken: set[str] = set()
        reservations = []
        for animal in animals:
            room_class = "venomous" if animal["venomous"] else animal["class"]
            pick = next(
                f["enclosure"]
                for f in free["free"]
                if f["class"] == room_class and f["enclosure"] not in taken
            )
            taken.add(pick)
            with OT.span(
                "reserve_enclosure",
                "TOOL",
                {"enclosure": pick, "animal": animal["tag"]},
                **{"tool.name": "reserve_enclosure"},
            ) as s:
                reservations.append(
                    s.output(
                        {
                            "enclosure": pick,
                            "animal": animal["tag"],
                            "species": animal["latin"],
                            "reservation": f"RS-{pick}-{animal['tag'][-2:]}",
                        }
                    )
                )
        return agent.output(reservations)


def intake(ref: str) -> dict[str, Any]:
    with OT.span("read_surrender_form", "TOOL", {"intake": ref}, **{"tool.name": "read_surrender_form"}) as s:
        form_rec = next(f for f in INPUTS.values() if f["intake"] == ref)
        form = s.output({k: form_rec[k] for k in ("intake", "owner", "date", "animals", "species", "text")})
    with OT.span("owner_history", "TOOL", {"owner": form["owner"]}, **{"tool.name": "owner_history"}) as s:
        s.output({"owner": form["owner"], "previous_surrenders": 0, "keeping_ban": False})
    with OT.span("keeper_notes", "TOOL", {"intake": ref}, **{"tool.name": "keeper_notes"}) as s:
        notes = list(form_rec["keeper_notes"])
        if kit.on("reptiles-notes"):
            notes += RECENT_NOTES_OTHER
        s.output(notes)
    triage = _ask(
        "You triage reptile surrenders: one line per species with count and venom status.",
        f"FORM: {json.dumps({'text': form['text'], 'species': form['species']})}\nNOTES: {json.dumps(notes)}",
    )
    with OT.span("parse_triage", "CHAIN", triage) as s:
        pattern = r"Species: ([A-Z][a-z]+ [a-z]+)( x(\d+))? \| venomous: (yes|no)"
        if kit.on("reptiles-count"):
            pattern = r"Species: ([A-Z][a-z]+ [a-z]+)()() ?\S* \| venomous: (yes|no)"
        rows = [
            {"latin": m.group(1), "count": int(m.group(3) or 1), "venomous": m.group(4) == "yes"}
            for m in re.finditer(pattern, triage)
        ]
        s.output(rows)
    animals = []
    for row in rows:
        for k in range(row["count"]):
            tag = f"{ref}-{len(animals) + 1:02d}"
            with OT.span(
                "microchip_scan",
                "TOOL",
                {"animal": tag, "species": row["latin"]},
                **{"tool.name": "microchip_scan"},
            ) as s:
                chip = s.output(
                    {
                        "animal": tag,
                        "chip": None if k else f"9410000{ref[-3:]}{len(animals)}",
                        "registry": "PETtrac" if not k else None,
                    }
                )
            animals.append(
                {"tag": tag, "latin": row["latin"], "venomous": row["venomous"], "chip": chip["chip"]}
            )
    needs: dict[str, dict[str, Any]] = {}
    for row in rows:
        with OT.span("care_sheet", "TOOL", {"species": row["latin"]}, **{"tool.name": "care_sheet"}) as s:
            limit = CARE_SHEET_LIMIT
            if kit.on("reptiles-uvb") and row["latin"] == "Pogona vitticeps":
                limit = 500
            sheet = s.output(_care_sheet(row["latin"])[:limit])
        needs[row["latin"]] = json.loads(
            _ask(
                "You read care sheets into housing needs, as JSON.",
                f"Species: {row['latin']}\nSHEET:\n{sheet}",
            )
        )
    for a in animals:
        a["class"] = needs[a["latin"]]["class"]
    reservations = housing_agent(animals)
    with OT.span("schedule_quarantine", "CHAIN", {"date": form["date"], "days": QUARANTINE_DAYS}) as s:
        start = date.fromisoformat(form["date"])
        last = QUARANTINE_DAYS - 1 if kit.on("reptiles-quarantine") else QUARANTINE_DAYS
        quarantine = s.output({"start": form["date"], "end": (start + timedelta(days=last)).isoformat()})
    with OT.span(
        "book_vet_check",
        "TOOL",
        {"date": quarantine["end"], "animals": len(animals)},
        **{"tool.name": "book_vet_check"},
    ) as s:
        vet = s.output({"appointment": f"VET-{ref[-4:]}", "date": quarantine["end"], "vet": "Dr. A. Mensah"})
    record = {
        "intake": ref,
        "date": form["date"],
        "animals": len(animals),
        "form_animals": form["animals"],
        "species": rows,
        "needs": needs,
        "reservations": reservations,
        "quarantine_end": quarantine["end"],
        "vet": vet,
    }
    _ask("You write intake summaries for the keepers' board.", f"INTAKE: {json.dumps(record)}")
    with OT.span("validate_intake", "CHAIN", record):
        validate_intake(record)
    return record


def validate_intake(rec: dict[str, Any]) -> None:
    if len(rec["reservations"]) != rec["form_animals"]:
        raise ValueError(
            f"intake {rec['intake']}: {rec['form_animals']} animals surrendered, "
            f"{len(rec['reservations'])} enclosures reserved"
        )
    for r in rec["reservations"]:
        sp = SPECIES[r["species"]]
        cls, occupant = BOARD_LIVE[r["enclosure"]]
        if cls == "venomous" and not sp["venomous"]:
            raise ValueError(
                f"intake {rec['intake']}: {sp['common']} {r['animal']} ({r['species']}) reserved into "
                f"venomous room {r['enclosure']}"
            )
        if occupant is not None:
            raise ValueError(
                f"intake {rec['intake']}: enclosure {r['enclosure']} reserved for {r['animal']} already "
                f"houses {occupant}"
            )
    for latin, need in rec["needs"].items():
        if SPECIES[latin]["uvb"] and not need["uvb"]:
            raise ValueError(
                f"intake {rec['intake']}: {latin} needs UVB lighting; the housing needs have none"
            )
    days = (date.fromisoformat(rec["quarantine_end"]) - date.fromisoformat(rec["date"])).days
    if days < QUARANTINE_DAYS:
        raise ValueError(
            f"intake {rec['intake']}: quarantine ends {rec['quarantine_end']}, {days} days after intake; "
            f"the rule is {QUARANTINE_DAYS} days"
        )


def record(server: Any, key: str, path: Path) -> None:
    global client
    server.use(brain)
    OT.exporter.clear()
    ref = INPUTS[key]["intake"]
    with OT.instrumented():
        client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            with OT.span(NAME, "AGENT", {"intake": ref}) as root:
                root.output(intake(ref))
        except ValueError:
            pass
        client.close()
    OT.write(path)
