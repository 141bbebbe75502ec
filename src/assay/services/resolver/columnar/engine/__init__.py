"""The columnar resolver's engine: every semantic of a decoded claim table resolved with
array operations (``vectorized``), sorting integers rather than arg-sorting (``sorting``),
the rare relation and capped rows on their own (``relations``) and the content references
of id-less rows that tie (``refs``)."""
