"""The emulator's HTTP surface: app, routes, middleware, auth, guards."""
