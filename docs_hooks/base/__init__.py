"""What every stage uses: the settings, the one error type, atomic writes, the cache folder and its stores."""
