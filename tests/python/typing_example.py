import neurochunk as nc
