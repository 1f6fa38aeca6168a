"""Links applied to traffic: every frame of every channel passes through its party's shaper.

``userspace`` paces frames through token buckets (:mod:`.bucket`, :mod:`.shaper`, :mod:`.wire`); ``kernel``
moves each party into a network namespace behind shaped veth pairs (:mod:`.kernel`); ``model`` only records
what crossed each link, for :mod:`hebench.links.model` to turn into times. :mod:`.scope` binds a process
(or a pool's client thread) to its party's link.
"""
