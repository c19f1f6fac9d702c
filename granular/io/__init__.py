"""Files: atomic writes, HDF5 and TOML reading, file kinds, shipped files and the user cache."""
