"""The eight agents of suite J (two per recording route)."""
