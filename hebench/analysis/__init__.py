"""Every verdict and the statistics behind it; no HTML, no printing."""
