"""Learning: regressors of extreme wrenches, the learned W(θ), training jobs, the media catalogue."""
