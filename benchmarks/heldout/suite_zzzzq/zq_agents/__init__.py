"""The eight public-safety agents of suite_zzzzq (one module each)."""
