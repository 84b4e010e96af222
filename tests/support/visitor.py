"""A person's browser over real HTTP (`requests`): its own cookies, forms posted with the CSRF token
of the page they are on, redirects not followed (tests look at them)."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import requests

from tests.support.forms import CSRF_FIELD, PASSWORD

TIMEOUT = 60


class Visitor:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()

    def get(self, path: str) -> requests.Response:
        return self.http.get(self.url + path, allow_redirects=False, timeout=TIMEOUT)

    def token(self, page: str) -> str:
        """The CSRF token of the form on `page`."""
        return CSRF_FIELD.search(self.get(page).text).group(1)

    def post(self, path: str, data: dict, page: str | None = None) -> requests.Response:
        """Fill in the form on `page` (`path` itself by default) and send it to `path`."""
        form = {**data, "csrf_token": self.token(page or path)}
        return self.http.post(self.url + path, data=form, allow_redirects=False, timeout=TIMEOUT)

    def sign_in(self, email: str, password: str = PASSWORD) -> requests.Response:
        return self.post("/login", {"email": email, "password": password})

    def is_signed_in(self) -> bool:
        return self.get("/account").status_code == 200

    def all_at_once(self, path: str, forms: list[dict], page: str) -> Counter[int]:
        """Post every form of `forms` to `path` at the same moment, each on its own connection
        with this visitor's cookies and token; how many answers had each status."""
        token, cookies = self.token(page), self.http.cookies.get_dict()
        start = Barrier(len(forms))

        def send(form: dict) -> int:
            start.wait()
            answer = requests.post(
                self.url + path,
                data={**form, "csrf_token": token},
                cookies=cookies,
                allow_redirects=False,
                timeout=TIMEOUT,
            )
            return answer.status_code

        with ThreadPoolExecutor(len(forms)) as pool:
            return Counter(pool.map(send, forms))


def signed_in_visitor(url: str, email: str, password: str = PASSWORD) -> Visitor:
    """A visitor of the portal at `url`, signed in as `email`."""
    visitor = Visitor(url)
    assert visitor.sign_in(email, password).status_code == 302, f"{email} could not sign in"
    return visitor
