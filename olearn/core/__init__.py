"""What every layer uses: byte and array helpers, declared state layouts, checks of untrusted
values, the option type, atomic output files, vector maths."""
