"""Sign-in cannot be forged from another page: the dev sign-in forms carry a token the
browser also holds in a cookie of its own (``__Host-assay-signin``, SameSite=Strict), so a
cross-site form post, which has neither, signs nobody in."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.browser import console_for
from tests.support.secure import secure_stack


async def test_a_post_without_the_pages_token_signs_nobody_in(tmp_path: Path) -> None:
    async with (
        secure_stack(tmp_path) as stack,
        console_for(stack) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        forged = await client.post("/signin/dev", data={"name": "operator", "next": "/"})
        assert forged.status_code == 403
        assert "__Host-assay" not in forged.cookies
        page = await client.get("/signin")
        token = page.cookies["__Host-assay-signin"]
        # httpx keeps a Secure cookie for HTTPS only (a browser keeps it for loopback too),
        # so the cookie the browser would send is sent as a header.
        assert f'value="{token}"' in page.text
        other = await client.post(
            "/signin/dev",
            data={"name": "operator", "next": "/", "signin": token + "x"},
            headers={"cookie": f"__Host-assay-signin={token}"},
        )
        assert other.status_code == 403
        signed = await client.post(
            "/signin/dev",
            data={"name": "operator", "next": "/", "signin": token},
            headers={"cookie": f"__Host-assay-signin={token}"},
        )
        assert signed.status_code == 303
        assert signed.headers["location"] == "/"
