"""The eight agents of suite_zzzzo (healthcare operations on the ground), one module each."""
