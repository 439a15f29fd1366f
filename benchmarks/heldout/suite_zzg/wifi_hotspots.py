"""OTLP route: provisioning a municipal Wi-Fi hotspot and publishing it to the city's open hotspot map."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import Case, OtlpRecorder, register, reply_json
from .kit import active

NAME = "city-wifi-provisioner"
ROUTE = "otlp"
DOMAIN = "municipal Wi-Fi hotspots"
SHAPE = "OTel/OpenInference: site registry, RF scan with retry, backhaul retriever, LLM channel plan, IPAM, captive-portal sub-agent, coverage chain, map publish"
SYSTEM = "[wifi] You plan municipal Wi-Fi hotspots. Answer JSON."

INPUTS = {
    "library_sq": {"site": "HS-2201", "name": "Market Square kiosk", "cabinet": "C-44", "street": "Market Square"},
    "riverside": {"site": "HS-2202", "name": "Riverside walk bench", "cabinet": "C-17", "street": "Quayside"},
    "station": {"site": "HS-2203", "name": "Station forecourt", "cabinet": "C-08", "street": "Station Approach"},
    "park": {"site": "HS-2204", "name": "Victoria Park gates", "cabinet": "C-31", "street": "Park Road"},
    "hall": {"site": "HS-2205", "name": "Town hall steps", "cabinet": "C-02", "street": "Civic Way"},
    "bus": {"site": "HS-2206", "name": "Bus interchange", "cabinet": "C-12", "street": "Mill Street"},
}
REF_INPUTS = ["station", "park", "hall", "bus"]
APPROVED_SSIDS = ["CityFree", "CityFree-Guest"]
_scan_calls: dict[str, int] = {}


def _policy(msgs: list[dict[str, Any]]) -> str:
    p = json.loads(msgs[-1]["content"])
    if p["task"] == "channel_plan":
        util = {c["channel"]: c["utilisation"] for c in p["scan"]}
        best = min(sorted(util), key=lambda c: util[c]) if util else 1
        free = [c for c in (1, 6, 11) if c not in util]
        ch = free[0] if free else best
        port = sorted(p["backhaul"], key=lambda b: (-b["mbps"], b["port"]))[0]["port"]
        return reply_json({"channel": ch, "backhaul_port": port, "tx_power_dbm": 17})
    if p["task"] == "portal":
        ssid = "CityFree-5G" if active("wifi_hallucinated") else APPROVED_SSIDS[0]
        return reply_json({"ssid": ssid, "session_minutes": 60, "terms_url": "https://wifi.city.example/terms"})
    raise ValueError(p["task"])


register("[wifi]", _policy)


def _site(site: str, street: str) -> dict:
    lat, lon = 53.4808 + int(site[-2:]) / 1000, -2.2426 - int(site[-2:]) / 1000
    row = {"site": site, "street": street, "lat": round(lat, 4), "lon": round(lon, 4), "mount": "lamp column", "power": "PoE"}
    if active("wifi_format_drift"):
        row["lat"], row["lon"] = f"{row['lat']:.4f}N", f"{abs(row['lon']):.4f}W"
    return row


def _air(site: str) -> list[dict]:
    rows = [{"channel": 1, "utilisation": 0.22}, {"channel": 11, "utilisation": 0.41}, {"channel": 6, "utilisation": 0.78},
            {"channel": 3, "utilisation": 0.12}]
    if site in ("HS-2202", "HS-2204"):
        rows = [{"channel": 6, "utilisation": 0.18}, {"channel": 1, "utilisation": 0.63}, {"channel": 11, "utilisation": 0.71}]
    return rows


def _scan(site: str) -> list[dict]:
    rows = _air(site)
    if active("wifi_truncated"):
        rows = rows[:2]
    return rows


def _backhaul(cabinet: str, street: str) -> list[dict]:
    ports = {"port": f"FTTP-{cabinet}-3", "cabinet": cabinet, "mbps": 900}, {"port": f"FTTP-{cabinet}-7", "cabinet": cabinet, "mbps": 500}
    if active("wifi_retrieval"):
        other = "C-12" if cabinet != "C-12" else "C-08"
        ports = {"port": f"FTTP-{other}-1", "cabinet": other, "mbps": 1000}, {"port": f"FTTP-{cabinet}-7", "cabinet": cabinet, "mbps": 500}
    return list(ports)


def record(inp: dict, path: Path) -> None:
    rec = OtlpRecorder("city-wifi")
    try:
        with rec.span(NAME, "AGENT", {"site": inp["site"], "task": "provision hotspot"}, agent__name=NAME) as top:
            with rec.span("work_order_lookup", "TOOL", {"site": inp["site"]}, tool__name="work_order_lookup") as s:
                rec.out(s, {"work_order": f"WO-{inp['site'][-4:]}", "requested_by": "Digital Inclusion team", "priority": "P2"})
            with rec.span("street_works_permit", "TOOL", {"street": inp["street"]}, tool__name="street_works_permit") as s:
                rec.out(s, {"street": inp["street"], "permit": "granted", "window": "2027-04-05/2027-04-16"})
            with rec.span("site_registry_lookup", "TOOL", {"site": inp["site"]}, tool__name="site_registry_lookup") as s:
                site = rec.out(s, _site(inp["site"], inp["street"]))
            scan: list[dict] = []
            for attempt in (1, 2):
                with rec.span("rf_scan", "TOOL", {"site": inp["site"], "band": "2.4GHz", "attempt": attempt}, tool__name="rf_scan") as s:
                    _scan_calls[inp["site"]] = _scan_calls.get(inp["site"], 0) + 1
                    if attempt == 1:
                        rec.out(s, {"status": "busy", "retry_after_s": 2})
                        continue
                    scan = rec.out(s, _scan(inp["site"]))
            with rec.span("backhaul_search", "RETRIEVER", {"cabinet": inp["cabinet"], "street": inp["street"]}) as s:
                backhaul = rec.out(s, _backhaul(inp["cabinet"], inp["street"]))
            plan_text = rec.llm("channel_planner", SYSTEM, {"task": "channel_plan", "scan": scan, "backhaul": backhaul})
            with rec.span("parse_channel_plan", "CHAIN", plan_text) as s:
                plan = rec.out(s, json.loads(plan_text))
            with rec.span("ipam_allocate", "CHAIN", {"site": inp["site"], "vlan": 240}) as s:
                try:
                    if active("wifi_swallowed"):
                        raise TimeoutError("IPAM pool 10.240.0.0/16 lock timeout")
                    subnet = f"10.240.{int(inp['site'][-2:])}.0/26"
                except TimeoutError:
                    subnet = "0.0.0.0/26"
                rec.out(s, {"subnet": subnet, "gateway": subnet.replace(".0/26", ".1")})
            with rec.span("captive_portal_agent", "AGENT", {"site": inp["site"]}, agent__name="captive-portal") as sub:
                with rec.span("portal_templates", "TOOL", {"city": "default"}, tool__name="portal_templates") as s:
                    rec.out(s, {"ssids": APPROVED_SSIDS, "languages": ["en", "cy"]})
                portal = json.loads(rec.llm("portal_config", SYSTEM, {"task": "portal", "site": inp["site"], "ssids": APPROVED_SSIDS}))
                rec.out(sub, portal)
            with rec.span("coverage_estimate", "CHAIN", {"tx_power_dbm": plan["tx_power_dbm"], "mount": site["mount"]}) as s:
                cov = rec.out(s, {"radius_m": 10 ** ((plan["tx_power_dbm"] - 20 + 47) / 20) // 1, "mount": site["mount"]})
            entry = {"site": inp["site"], "name": inp["name"], "lat": site["lat"], "lon": site["lon"], "ssid": portal["ssid"],
                     "channel": plan["channel"], "backhaul_port": plan["backhaul_port"], "subnet": subnet, "radius_m": cov["radius_m"]}
            with rec.span("publish_hotspot_map", "TOOL", entry, tool__name="publish_hotspot_map") as s:
                if not isinstance(entry["lat"], float) or not isinstance(entry["lon"], float):
                    raise ValueError(f'HTTP 400 {{"error": "invalid_geometry", "lat": {json.dumps(entry["lat"])}, "lon": {json.dumps(entry["lon"])}}}')
                if entry["subnet"].startswith("0.0.0.0"):
                    raise ValueError(f'HTTP 422 {{"error": "controller_rejected", "detail": "subnet {entry["subnet"]} is not routable"}}')
                if entry["ssid"] not in APPROVED_SSIDS:
                    raise ValueError(f'HTTP 422 {{"error": "ssid_not_approved", "ssid": "{entry["ssid"]}"}}')
                if not entry["backhaul_port"].startswith(f"FTTP-{inp['cabinet']}-"):
                    raise ValueError(f'HTTP 409 {{"error": "port_not_at_cabinet", "port": "{entry["backhaul_port"]}", "cabinet": "{inp["cabinet"]}"}}')
                util = {c["channel"]: c["utilisation"] for c in _air(inp["site"])}
                if util.get(entry["channel"], 0) > 0.5:
                    raise ValueError(f"controller: channel {entry['channel']} utilisation {util[entry['channel']]:.0%} at {inp['site']} is over the 50% limit")
                rec.out(s, {"published": True, "map_id": f"MAP-{inp['site']}"})
            rec.out(top, {"published": inp["site"]})
    except ValueError:
        pass
    rec.write(path)


CASES = [
    Case("wifi_01", "wifi_truncated", "truncated_result", "riverside", "rf_scan", 2, "tool",
         "publish_hotspot_map", "The RF scan answers only its first two channel rows, so the planner cannot see channel 6 is crowded."),
    Case("wifi_02", "wifi_retrieval", "wrong_retrieval", "library_sq", "backhaul_search", 1, "retrieval",
         "publish_hotspot_map", "The backhaul search returns a port at another street cabinet as the fastest option."),
    Case("wifi_03", "wifi_hallucinated", "hallucinated_value", "riverside", "portal_config", 1, "llm",
         "publish_hotspot_map", "The captive-portal model invents an SSID CityFree-5G that is not among the approved templates."),
    Case("wifi_04", "wifi_swallowed", "swallowed_error", "library_sq", "ipam_allocate", 1, "other",
         "publish_hotspot_map", "An IPAM lock timeout is caught and the allocator hands out a 0.0.0.0/26 placeholder subnet."),
    Case("wifi_05", "wifi_format_drift", "format_drift", "library_sq", "site_registry_lookup", 1, "tool",
         "publish_hotspot_map", "The site registry answers coordinates as hemisphere-suffixed text instead of signed decimals."),
]
