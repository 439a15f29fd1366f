"""The eight agents of suite_zzzzg (one module each)."""
