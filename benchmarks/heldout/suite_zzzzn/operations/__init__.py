"""The eight agents of suite_zzzzn: ports, shipping, aviation ground handling and warehousing."""

MODULES = (
    "reefer_yard",
    "pilot_tug",
    "bunker_desk",
    "imdg_stowage",
    "deicing_dispatch",
    "bonded_release",
    "uld_buildup",
    "waste_reception",
)
