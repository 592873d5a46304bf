"""The two small pages of browser login: the login page (also the answer to a browser that asks
for a page without a session) and the page that opens the dashboard once a session is set.

Self-contained: inline style, no script, no image, nothing loaded from elsewhere.
"""

from __future__ import annotations

import html

from premath.web.sessions import CODE_TTL_S

PAGE_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": PAGE_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;"
    "color:#1d232b;background:#f6f7f9}h1{font-size:1.4rem}code{font-size:.9em;"
    "background:#e8ebef;padding:.1em .3em;border-radius:3px;overflow-wrap:anywhere}"
    ".notice{background:#fff3cd;border:1px solid #e6c65c;padding:.6rem .8rem;border-radius:4px}"
    "form{display:flex;gap:.5rem;margin:1rem 0}input{flex:1;font:inherit;padding:.4rem}"
    "button{font:inherit;padding:.4rem 1rem}"
)


def _page(title: str, body: str, head: str = "") -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><title>{html.escape(title)}</title>{head}'
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def login_page(command: str, notice: str | None = None) -> str:
    """How to log in: the start-up link, or a token pasted into the form."""
    minutes = round(CODE_TTL_S / 60)
    shown = f'<p class="notice" role="alert">{html.escape(notice)}</p>' if notice else ""
    return _page(
        "Log in · premath",
        "<h1>Log in to the premath dashboard</h1>"
        f"{shown}"
        f"<p>Open the one-time login link that <code>premath {html.escape(command)}</code> "
        "printed when it started (its <code>login:</code> line). A link works once, within "
        f"{minutes} minutes.</p>"
        "<p>Or paste one of the server's bearer tokens (the second field of a line of its "
        "token file):</p>"
        '<form method="post" action="/login">'
        '<input type="password" name="token" aria-label="Token" autocomplete="off" required>'
        '<button type="submit">Log in</button></form>'
        "<p>Anyone holding a token can also ask the server for a new link: "
        "<code>curl -X POST -H 'Authorization: Bearer TOKEN' "
        "https://HOST:PORT/login/code</code> (<code>http://</code> without TLS).</p>",
    )


def opening_page() -> str:
    """Logged in: go to the dashboard. A same-site navigation from this page (not a redirect
    of the login link), so the SameSite=Strict cookie goes with it even when the link was
    opened from another site, e.g. a chat or a mail."""
    return _page(
        "Logged in · premath",
        '<h1>Logged in</h1><p><a href="/dashboard">Open the dashboard</a></p>',
        head='<meta http-equiv="refresh" content="0;url=/dashboard">',
    )
