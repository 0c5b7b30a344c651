"""Monitors and schedules: pages watched and commands run at set times, for a controller.

``when`` holds the timing rules (intervals, daily/weekdays/cron in a time zone, backoff,
jitter), ``change`` what a changed page is (normalised text, contains/missing, a short line
diff), ``service`` the scheduler that keeps them in the state store and runs them, and
``check`` the one function that reads a page for a check.
"""
