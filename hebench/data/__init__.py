"""Datasets: the embedded default (digits), FEMNIST (LEAF JSON, TFF h5), torchvision sets."""
