"""The console: the people in the loop work in a browser, through the public contract only.

A backend-for-frontend: pages rendered on the server, every call to a service made with the
signed-in person's own credential, so the services' roles, tenant walls, identity binding
and blinding stay the only authority. It holds no role and never touches storage.
"""
