"""The console's pages by role: each module gives ``routes(console)`` for one kind of
person (adjudicator, approver, operator, auditor), and shows only what the services
return to that person's own token."""
