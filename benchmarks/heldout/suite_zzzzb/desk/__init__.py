"""The eight office and service agents of suite_zzzzb."""
