"""Data: the wrench-dataset format and its sources (RFT, terramechanics, rig and DEM runs)."""
