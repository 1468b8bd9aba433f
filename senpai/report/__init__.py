"""`senpai report`: the research so far as one HTML page with plots, or as Markdown, computed from
the ledger alone (`summary`), drawn by matplotlib (`plots`) and rendered by jinja2 (`render`)."""
