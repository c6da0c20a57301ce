"""Commands against a live deployment: import, restore, rebuild, switch-over, topics."""
