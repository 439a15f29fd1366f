"""The eight agents of suite_zzzzj (education, training and childcare)."""
