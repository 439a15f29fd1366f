"""Zoo-keeper training course (otlp): a grader that loops over the species a trainee was examined on, retrieving manual
passages, grading each written answer with a model, keeping grades in a notebook (memory tools), then certifying."""
import json

from openai import OpenAI
from opentelemetry.trace import Status, StatusCode

import otlp_kit

NAME, ROUTE, DOMAIN = "keeper-course-grader", "otlp", "zoo-keeper training course"
SHAPE = "trainee file -> per species: manual retriever, grading model (OpenInference), grade parser, notebook memory write -> practical log tool -> notebook reads -> certificate tool"
ON: set = set()

MANUAL = {
    "giraffe": [("HM-4.1", "Giraffe: browse at height, 30 kg of acacia and lucerne daily; hoof trims under target training."),
                ("HM-4.2", "Giraffe: never enter a stall with an unrestrained giraffe; work through protected contact.")],
    "red panda": [("HM-7.3", "Red panda: bamboo leaf 200 g per kg of body weight; heat stress above 25 C."),
                  ("HM-7.4", "Red panda: weigh weekly, record on the husbandry sheet.")],
    "african penguin": [("HM-2.1", "African penguin: fish fed by hand, count every fish; vitamin B1 and salt supplements."),
                        ("HM-2.2", "African penguin: moult season, no swimming, extra feeding.")],
    "meerkat": [("HM-5.6", "Meerkat: scatter feed insects, keep sentinels' sight lines; heat lamp in winter.")],
    "asian elephant": [("HM-9.1", "Asian elephant: protected contact only; foot care daily."),
                       ("HM-9.2", "Asian elephant: 150 kg forage daily, enrichment scattered across the yard.")],
}
INPUTS = [
    {"trainee": "Aiyana Brooks", "cohort": "2027A", "species": ["giraffe", "red panda", "meerkat"]},
    {"trainee": "Dmitri Volkov", "cohort": "2027A", "species": ["african penguin", "meerkat", "giraffe", "red panda"]},
    {"trainee": "Hana Sato", "cohort": "2027B", "species": ["asian elephant", "giraffe"]},
    {"trainee": "Kwame Mensah", "cohort": "2027B", "species": ["red panda", "african penguin", "asian elephant"]},
    {"trainee": "Lucia Ferreira", "cohort": "2027B", "species": ["meerkat", "african penguin", "giraffe", "asian elephant", "red panda"]},
]
CASES = [
    {"id": "zzzm-31", "input": 1, "switch": "carry_passages", "kind": "context_pollution",
     "root": ("build_grading_prompt", 2, None), "failure": ("issue_certificate", 1),
     "description": "The grading prompt for the meerkat answer also carries the penguin passages from the previous species, so the grader marks it against penguin care."},
    {"id": "zzzm-32", "input": 3, "switch": "score_out_of_ten", "kind": "format_drift",
     "root": ("ChatCompletion", 2, "llm"), "failure": ("issue_certificate", 1),
     "description": "For the penguin answer the grading model gives the score as a mark out of ten instead of the percentage the course uses."},
    {"id": "zzzm-33", "input": 4, "switch": "notebook_key", "kind": "bad_memory_write",
     "root": ("notebook_write", 3, "tool"), "failure": ("issue_certificate", 1),
     "description": "The notebook write for the giraffe grade stores it under the previous species' key, replacing the penguin grade."},
    {"id": "zzzm-34", "input": 0, "switch": "cite_section", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("issue_certificate", 1),
     "description": "The grading model cites manual section HM-4.7 for the giraffe answer, a section the retriever never returned and the manual does not have."},
    {"id": "zzzm-35", "input": 2, "switch": "log_page", "kind": "truncated_result",
     "root": ("practical_log_lookup", 1, "tool"), "failure": ("issue_certificate", 1),
     "description": "The practical log lookup returns only its first page of supervised shifts, so the trainee's hours look short."},
]
ANSWERS = {"giraffe": "Protected contact, acacia browse at height, target training for hooves.",
           "red panda": "Bamboo leaf by body weight, watch heat over 25 C, weekly weights.",
           "african penguin": "Hand-feed counted fish with B1 and salt, no swimming in moult.",
           "meerkat": "Scatter insects, keep sentinel sight lines, heat lamp in winter.",
           "asian elephant": "Protected contact, daily foot care, 150 kg forage with enrichment."}


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    species = prompt.split("SPECIES:", 1)[1].split("\n", 1)[0].strip()
    cited = [line.split("]")[0].strip("[") for line in prompt.splitlines() if line.startswith("[HM-")]
    own = [c for c in cited if c in dict(MANUAL[species])]
    score = 82 if len(own) == len(cited) else 41
    if "score_out_of_ten" in ON and species == "african penguin":
        score = 8
    cite = own[0]
    if "cite_section" in ON and species == "giraffe":
        cite = "HM-4.7"
    return json.dumps({"species": species, "score": score, "cites": cite, "comment": "covers the manual's main points"})


def run_one(inp, path, server):
    tr = otlp_kit.tracer("keeper-course")
    client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    notebook: dict = {}
    try:
        with tr.start_as_current_span(NAME, attributes=otlp_kit.attrs("AGENT", {"trainee": inp["trainee"], "cohort": inp["cohort"]})):
            with tr.start_as_current_span("load_trainee_file", attributes=otlp_kit.attrs("CHAIN", inp)) as s:
                file = {**inp, "answers": {sp: ANSWERS[sp] for sp in inp["species"]}}
                s.set_attributes(otlp_kit.output(file))
            carried: list = []
            prev = None
            for sp in file["species"]:
                with tr.start_as_current_span("husbandry_manual_search", attributes=otlp_kit.attrs("RETRIEVER", sp)) as s:
                    docs = [{"id": i, "text": t} for i, t in MANUAL[sp]]
                    for k, d in enumerate(docs):
                        s.set_attribute(f"retrieval.documents.{k}.document.id", d["id"])
                        s.set_attribute(f"retrieval.documents.{k}.document.content", d["text"])
                with tr.start_as_current_span("build_grading_prompt", attributes=otlp_kit.attrs("CHAIN", {"species": sp, "passages": [d["id"] for d in docs]})) as s:
                    passages = docs + carried if "carry_passages" in ON else docs
                    prompt = (f"Grade the trainee's answer against the manual.\nSPECIES: {sp}\n"
                              + "\n".join(f"[{d['id']}] {d['text']}" for d in passages)
                              + f"\nANSWER: {file['answers'][sp]}\nReply JSON: species, score (percent), cites, comment.")
                    s.set_attributes(otlp_kit.output(prompt))
                carried = docs
                reply = client.chat.completions.create(model="course-grader", messages=[
                    {"role": "system", "content": "You are the course's senior keeper grading written answers."},
                    {"role": "user", "content": prompt}])
                text = reply.choices[0].message.content
                with tr.start_as_current_span("read_grade", attributes=otlp_kit.attrs("CHAIN", text)) as s:
                    grade = json.loads(text)
                    grade = {"species": grade["species"], "score": float(grade["score"]), "cites": grade["cites"]}
                    s.set_attributes(otlp_kit.output(grade))
                key = prev if ("notebook_key" in ON and sp == "giraffe") else sp
                with tr.start_as_current_span("notebook_write", attributes=otlp_kit.attrs("TOOL", {"key": key, "value": grade}, tool_name="notebook_write")) as s:
                    notebook[f"grade:{key}"] = grade
                    s.set_attributes(otlp_kit.output({"stored": f"grade:{key}"}))
                prev = sp
            with tr.start_as_current_span("practical_log_lookup", attributes=otlp_kit.attrs("TOOL", {"trainee": inp["trainee"]}, tool_name="practical_log_lookup")) as s:
                shifts = [{"shift": i + 1, "hours": 8, "supervisor": "R. Adeyemi" if i % 2 else "C. Lindqvist"} for i in range(22)]
                if "log_page" in ON:
                    shifts = shifts[:12]
                log = {"trainee": inp["trainee"], "shifts": shifts}
                s.set_attributes(otlp_kit.output(log))
            grades = []
            for sp in file["species"]:
                with tr.start_as_current_span("notebook_read", attributes=otlp_kit.attrs("TOOL", {"key": f"grade:{sp}"}, tool_name="notebook_read")) as s:
                    g = notebook.get(f"grade:{sp}")
                    s.set_attributes(otlp_kit.output(g if g is not None else "null"))
                    grades.append((sp, g))
            with tr.start_as_current_span("issue_certificate", attributes=otlp_kit.attrs("TOOL", {"trainee": inp["trainee"], "grades": [g for _, g in grades], "shifts": len(log["shifts"])}, tool_name="issue_certificate")) as s:
                for sp, g in grades:
                    if g is None:
                        raise LookupError(f"no grade on file for {sp}: certificate cannot be issued")
                    if g["species"] != sp:
                        raise ValueError(f"grade filed for {sp} is for {g['species']}")
                    if g["score"] < 60:
                        raise ValueError(f"{sp} written answer scored {g['score']:.0f}%, pass mark is 60%")
                    if g["cites"] not in dict(MANUAL[sp]):
                        raise ValueError(f"{sp} grade cites manual section {g['cites']}, which is not in the husbandry manual")
                hours = sum(x["hours"] for x in log["shifts"])
                if hours < 160:
                    raise ValueError(f"{hours} supervised hours logged, the course requires 160")
                s.set_attributes(otlp_kit.output({"certificate": f"ZK-{inp['cohort']}-{inp['trainee'].split()[-1].upper()}"}))
    except Exception:
        pass
    otlp_kit.write(path)
