"""Cron rules: when a recurring task fires (pure schedule logic in `schedule.py`)."""
