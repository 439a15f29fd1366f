"""Passport photo booths: capture, check and crop a passport photo, then obtain the online photo code (OTLP)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .common import Case
from .kit import active
from .llmclient import last_user
from .otlp_common import Traced

AGENT = "passport-photo-booth"
ROUTE = "otlp"

SPECS = {
    "GB": {"country": "GB", "authority": "HM Passport Office", "width_mm": 35, "height_mm": 45, "head_min_mm": 29, "head_max_mm": 34, "backgrounds": ["#E6E6E6", "#F3EBDD"]},
    "IE": {"country": "IE", "authority": "Passport Service Ireland", "width_mm": 35, "height_mm": 45, "head_min_mm": 32, "head_max_mm": 36, "backgrounds": ["#E6E6E6", "#FFFFFF"]},
    "US": {"country": "US", "authority": "US Department of State", "width_mm": 51, "height_mm": 51, "head_min_mm": 25, "head_max_mm": 35, "backgrounds": ["#FFFFFF"]},
}
SESSIONS = {
    "PB-17/0931": {"country": "GB", "box": (412, 230, 388, 517), "closed_eyes": [1], "backdrop": "#E6E6E6"},
    "PB-22/1044": {"country": "GB", "box": (398, 241, 402, 530), "closed_eyes": [1], "backdrop": "#F3EBDD"},
    "PB-03/0815": {"country": "GB", "box": (420, 226, 380, 505), "closed_eyes": [], "backdrop": "#E6E6E6"},
    "PB-09/1122": {"country": "IE", "box": (405, 219, 410, 570), "closed_eyes": [1, 2], "backdrop": "#E6E6E6"},
    "PB-31/1307": {"country": "GB", "box": (430, 238, 376, 498), "closed_eyes": [2], "backdrop": "#F3EBDD"},
    "PB-40/1618": {"country": "IE", "box": (401, 224, 415, 582), "closed_eyes": [], "backdrop": "#FFFFFF"},
}


class PhotoCodeRefused(Exception):
    pass


PhotoCodeRefused.__module__ = "photocode.client"


def policy(request):
    prompt = last_user(request)
    m = re.search(r"eyes: (\w+)", prompt)
    if m and m.group(1) == "closed":
        return "Composition acceptable, head centred. RETAKE: right eye closed."
    return "PASS: neutral expression, both eyes open, no glare."


def record(session: str, path: Path, server) -> None:
    server.use(policy)
    data = SESSIONS[session]
    booth = session.split("/")[0]
    t = Traced(AGENT, server)
    try:
        with t.span(AGENT, "AGENT", input=f"Passport photo session {session}", **{"agent.name": AGENT}) as root:
            with t.span("read_session", "CHAIN", input={"session": session}) as s:
                sess = {"session": session, "booth": booth, "country": data["country"], "product": "digital photo code"}
                s.output = sess
            with t.span("fetch_photo_spec", "RETRIEVER", input=f"passport photo requirements {sess['country']}") as s:
                spec = SPECS["US" if active("pp-01") else sess["country"]]
                s.output = {"documents": [spec]}
            with t.span("read_booth_config", "TOOL", input={"booth": booth}) as s:
                config = {"booth": booth, "dpi": 600, "camera": "EOS-M50", "mm_per_px": 0.06}
                s.output = config
            memory: dict = {}
            attempt = 0
            while "best_frame" not in memory and attempt < 4:
                attempt += 1
                frame = f"F-{booth[3:]}-{attempt}"
                with t.span("capture_frame", "TOOL", input={"booth": booth, "attempt": attempt}) as s:
                    s.output = {"frame": frame, "exposure_ms": 8, "flash": "diffuse"}
                with t.span("detect_face", "TOOL", input={"frame": frame}) as s:
                    x, y, w, h = data["box"]
                    box, fmt = f"{x},{y},{w},{h}", "xywh"
                    if active("pp-04") and attempt == 2:
                        box, fmt = f"{x},{y},{x + w},{y + h}", "xyxy"  # detector v3 answers corners
                    eyes = "closed" if attempt in data["closed_eyes"] else "open"
                    det = {"frame": frame, "box": box, "box_format": fmt, "eyes": eyes, "glare": False}
                    s.output = det
                with t.span("parse_face_box", "CHAIN", input=det["box"]) as s:
                    bx, by, bw, bh = (int(v) for v in det["box"].split(","))
                    face = {"x": bx, "y": by, "w": bw, "h": bh}
                    s.output = face
                verdict = t.llm("assess_compliance", "You check passport photos against the rules.",
                                f"Frame {frame}: face box {json.dumps(face)}, eyes: {det['eyes']}, glare: no. Is it compliant?")
                with t.span("parse_assessment", "CHAIN", input=verdict) as s:
                    text = verdict.split(".")[0] if active("pp-03") and attempt == 1 else verdict
                    ok = "RETAKE" not in text
                    s.output = {"frame": frame, "ok": ok}
                with t.span("remember_best_frame", "CHAIN", input={"frame": frame, "ok": ok}) as s:
                    memory.setdefault("frames", []).append(frame)
                    if ok:
                        memory["best_frame"] = memory["frames"][-2] if active("pp-02") else frame
                        memory["face"] = face
                    s.output = {k: v for k, v in memory.items()}
            with t.span("crop_to_spec", "CHAIN", input={"frame": memory["best_frame"], "face": memory["face"], "spec": spec["country"]}) as s:
                crop = {"frame": memory["best_frame"], "width_mm": spec["width_mm"], "height_mm": spec["height_mm"],
                        "head_mm": round(memory["face"]["h"] * config["mm_per_px"], 1)}
                s.output = crop
            with t.span("check_background", "TOOL", input={"frame": crop["frame"]}) as s:
                try:
                    if active("pp-05"):
                        raise OSError("colorimeter read timeout on /dev/ttyUSB1")
                    bg = {"colour": data["backdrop"], "uniform": True, "shadow_pct": 2}
                except OSError:
                    bg = {"colour": "#FFFFFF", "uniform": True, "shadow_pct": 0}  # factory calibration value
                s.output = bg
            with t.span("submit_photo_code", "TOOL", input={"session": session, "crop": crop, "background": bg["colour"]}) as s:
                real = SPECS[data["country"]]
                if (crop["width_mm"], crop["height_mm"]) != (real["width_mm"], real["height_mm"]):
                    raise PhotoCodeRefused(f"400 Bad Request: photo {crop['width_mm']}x{crop['height_mm']} mm not accepted; {real['authority']} requires {real['width_mm']}x{real['height_mm']} mm")
                n = int(crop["frame"].rsplit("-", 1)[1])
                if n in data["closed_eyes"]:
                    raise PhotoCodeRefused(f"400 Bad Request: eyes not fully open in frame {crop['frame']} (automated check FC-{n}1)")
                if not real["head_min_mm"] <= crop["head_mm"] <= real["head_max_mm"]:
                    raise PhotoCodeRefused(f"400 Bad Request: head height {crop['head_mm']} mm outside {real['head_min_mm']}-{real['head_max_mm']} mm")
                if bg["colour"] not in real["backgrounds"]:
                    raise PhotoCodeRefused(f"400 Bad Request: background colour {bg['colour']} not accepted; {real['authority']} accepts {', '.join(real['backgrounds'])}")
                s.output = {"photo_code": f"PC-{booth[3:]}{n}-{session[-4:]}", "status": "issued"}
            root.output = s.output
    except PhotoCodeRefused:
        pass
    t.write(path)


REF_INPUTS = ["PB-03/0815", "PB-09/1122", "PB-31/1307", "PB-40/1618"]
CASES = [
    Case("pp-01", "wrong_retrieval", "PB-17/0931", ("fetch_photo_spec", 1), ("submit_photo_code", 1),
         "The spec search returns the US photo rules for a GB session, so the crop is 51x51 mm."),
    Case("pp-02", "bad_memory_write", "PB-22/1044", ("remember_best_frame", 2), ("submit_photo_code", 1),
         "The session memory stores the previous attempt's frame as the best frame."),
    Case("pp-03", "lossy_parsing", "PB-17/0931", ("parse_assessment", 1), ("submit_photo_code", 1),
         "The assessment parser keeps only the first sentence of the model's verdict and misses the retake request."),
    Case("pp-04", "format_drift", "PB-22/1044", ("detect_face", 2), ("submit_photo_code", 1),
         "The face detector answers the box as corners instead of width and height, so the head height is overstated."),
    Case("pp-05", "swallowed_error", "PB-17/0931", ("check_background", 1), ("submit_photo_code", 1),
         "A colorimeter timeout is caught and the factory white value is reported as the measured background."),
]
