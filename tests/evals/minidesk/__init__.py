"""A four-table support desk for eval tests: text ids from the RNG, an integer key, clock stamps."""
