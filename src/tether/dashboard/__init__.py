"""The web dashboard: HTML pages and static assets that drive the REST API from the browser.

``create_router(tether_app)`` returns a FastAPI router serving the pages at ``/``. The pages
carry no job data: the browser signs in with an API token and fetches everything from
``/api/v1`` with it, so the dashboard has exactly the API's authentication and project scoping.
"""

from .router import create_router

__all__ = ["create_router"]
