"""PageSpeed: Lighthouse lab data and Chrome UX Report field data of key URLs."""
