"""The columnar resolver's engine: every semantic of a decoded claim table resolved with
array operations (``vectorized``, in named ``stages``), sorting integers rather than
arg-sorting (``sorting``), ties broken by claim_ref (``ties``), the rare relation and
capped rows on their own (``relations``) and the content references of id-less rows that
tie (``refs``)."""
