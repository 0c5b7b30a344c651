"""Monitors and schedules: pages watched and commands run at set times, for a controller.

``when`` holds the timing rules (intervals, daily/weekdays/cron in a time zone, backoff,
jitter), ``change`` what a changed page is (normalised text, contains/missing, a short line
diff), ``outcome`` what one check means for its monitor, ``shown`` how they read in messages
and lists, ``check`` the one function that opens a page for a check, and ``service`` the
scheduler that keeps them in the state store and runs them.
"""
