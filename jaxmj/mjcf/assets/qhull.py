"""qhull's own hull structures, read the way MuJoCo's mjCMesh::MakeGraph reads them.

MuJoCo numbers a mesh's hull vertices in the order of qhull's internal vertex list and lists
each vertex's neighbours through its set of neighbouring facets, whose order is whatever
qhull's incremental build and merges left there. Neither order is exposed by scipy (nor
computable from the triangles), so this module runs the same qhull release MuJoCo 4.0
links (2020.2, from the cmeel-qhull wheel) through ctypes with MuJoCo's call sequence --
build with the given options, triangulate ("Qt"), make vertex neighbours -- and walks
qhull's linked lists itself.

Only the qhull structures' leading fields are read (vertexT, facetT, setT in
libqhull_r.h/qset_r.h; offsets for little-endian LP64 ABIs), never qhT, whose layout depends on the
platform's jmp_buf: the lists are reached from a vertex of qh_pointvertex through the
next/previous links.

Where that library cannot be used (no cmeel-qhull wheel, e.g. on Windows, or a big-endian or
32-bit platform), `hull` falls back to scipy's copy of the same qhull with a warning: the
same hull, triangles and orientation, but hull vertices numbered by first appearance in the
triangle list and neighbours listed in triangle order, so `mesh_graph` equals MuJoCo's only
up to that numbering.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.metadata
import os
import struct
import sys
import warnings

import numpy as np

VERSION = "2020.2"  # the qhull release of MuJoCo 4.0.0 (and of scipy's bundled copy)
_QHT_BYTES = 1 << 16  # room for qhT (8.8 kB on x86_64 Linux)
# vertexT: next, previous, point, neighbors (pointers, from offset 0). facetT (120 bytes):
# previous at 48, next at 56, vertices at 64, flag bits from byte 112 (toporient: bit 4 of
# byte 113). setT: int maxsize, then the elements from byte 8.
_TOPORIENT = 0x10


class QhullError(ValueError):
  """qhull rejected the points (its first message line)."""


def _library_path() -> str:
  if sys.byteorder != "little" or struct.calcsize("P") != 8 or sys.platform == "win32":
    raise ImportError("reading qhull's lists needs a little-endian LP64 platform")
  dist = importlib.metadata.distribution("cmeel-qhull")
  for f in dist.files or ():
    name = os.path.basename(str(f))
    if name.startswith("libqhull_r.") and (name.endswith((".so", ".dylib", ".dll"))
                                           or ".so." in name):
      return str(dist.locate_file(f))
  raise ImportError("cmeel-qhull ships no libqhull_r")


@functools.cache
def _lib():
  """libqhull_r with the prototypes used here, checked to be MuJoCo's qhull release."""
  lib = ctypes.CDLL(_library_path())
  version = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "qh_version"))).decode()
  if not version.startswith(VERSION):
    raise ImportError(f"libqhull_r is qhull {version}; MuJoCo 4.0's hulls need {VERSION}")
  p, i = ctypes.c_void_p, ctypes.c_int
  for name, res, args in (
      ("qh_zero", None, [p, p]),
      ("qh_new_qhull", i, [p, i, i, p, i, ctypes.c_char_p, p, p]),
      ("qh_vertexneighbors", None, [p]),
      ("qh_pointvertex", p, [p]),
      ("qh_settempfree", None, [p, p]),
      ("qh_freeqhull", None, [p, i]),
      ("qh_memfreeshort", None, [p, ctypes.POINTER(i), ctypes.POINTER(i)])):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = res, args
  libc = ctypes.CDLL(ctypes.util.find_library("c"))
  libc.tmpfile.restype = p
  libc.fclose.argtypes = libc.fflush.argtypes = libc.fileno.argtypes = [p]
  return lib, libc


def _bytes(addr: int, nbytes: int) -> bytes:
  """A copy of `nbytes` of memory at `addr` (faster than ctypes.string_at)."""
  return (ctypes.c_char * nbytes).from_address(addr).raw


def _set(addr: int) -> list[int]:
  """The elements of a qhull setT: int maxsize, then maxsize pointers and a last slot
  holding size + 1 (0: full)."""
  maxsize = ctypes.c_int.from_address(addr).value
  elems = struct.unpack(f"={maxsize + 1}Q", _bytes(addr + 8, 8 * (maxsize + 1)))
  size = elems[maxsize] & 0xFFFFFFFF  # an int in a pointer-sized union (little-endian)
  return elems[:size - 1 if size else maxsize]


def _walk(addr: int, prev_at: int, next_at: int, nbytes: int) -> list[bytes]:
  """Every real node of the qhull list through `addr`, from its head: its address and first
  `nbytes` (the list ends with a sentinel whose next is NULL)."""
  while (prev := ctypes.c_void_p.from_address(addr + prev_at).value):
    addr = prev
  nodes, raw = [], ctypes.c_char * nbytes
  while True:
    node = raw.from_address(addr).raw
    nxt = int.from_bytes(node[next_at:next_at + 8], sys.byteorder)
    if not nxt:
      return nodes
    nodes.append(addr.to_bytes(8, sys.byteorder) + node)
    addr = nxt


def _error(libc, errfile) -> str:
  libc.fflush(errfile)
  fd = libc.fileno(errfile)
  os.lseek(fd, 0, os.SEEK_SET)
  lines = os.read(fd, 1 << 14).decode(errors="replace").strip().splitlines()
  return lines[0] if lines else "qhull failed"


def hull(points: np.ndarray, options: str):
  """qhull of `points` (n, 3) with "qhull Qt <options>", as MakeGraph sees it.

  Returns (vertices, neighbours, count, facets, toporient): the point ids of qhull's vertex
  list in its order (nv,); each vertex's neighbouring facets (facet indices in set order),
  concatenated, and their number per vertex (nv,); each facet's point ids in qhull's set
  order (nf, 3), facets in facet-list order; qhull's toporient flag per facet (nf,) bool.
  Raises QhullError when qhull fails.
  """
  try:
    lib, libc = _lib()
  except (ImportError, OSError) as e:
    _warn_fallback(str(e))
    return _scipy_hull(points, options)
  pts = np.ascontiguousarray(points, np.float64).reshape(-1, 3)
  if not np.all(np.isfinite(pts)):
    raise QhullError("points must be finite")
  qh = (ctypes.c_char * _QHT_BYTES)()
  errfile = libc.tmpfile()
  try:
    lib.qh_zero(qh, errfile)
    try:
      if lib.qh_new_qhull(qh, 3, len(pts), pts.ctypes.data, 0,
                          f"qhull Qt {options}".encode(), None, errfile):
        raise QhullError(_error(libc, errfile))
      lib.qh_vertexneighbors(qh)
      return _read(lib, qh, pts)
    finally:
      curlong, totlong = ctypes.c_int(), ctypes.c_int()
      lib.qh_freeqhull(qh, 0)  # !qh_ALL: long memory here, short memory next
      lib.qh_memfreeshort(qh, ctypes.byref(curlong), ctypes.byref(totlong))
  finally:
    libc.fclose(errfile)


def _read(lib, qh, pts: np.ndarray):
  byid = ctypes.c_void_p(lib.qh_pointvertex(qh))
  # indexed by point id, NULL for points that are not vertices
  byid_elems = np.frombuffer(_bytes(byid.value + 8, 8 * len(pts)), np.uint64)
  first = int(byid_elems[np.flatnonzero(byid_elems)[0]])
  lib.qh_settempfree(qh, ctypes.byref(byid))
  # each row: own address, then vertexT's next, previous, point, neighbors
  vrows = np.frombuffer(b"".join(_walk(first, 8, 0, 32)), np.uint64).reshape(-1, 5)
  pid = ((vrows[:, 3] - np.uint64(pts.ctypes.data)) // np.uint64(24)).astype(np.int64)
  nbrs = [_set(a) for a in vrows[:, 4].tolist()]
  fraw = np.frombuffer(b"".join(_walk(nbrs[0][0], 48, 56, 120)), np.uint8).reshape(-1, 128)
  faddr = fraw[:, :8].copy().view(np.uint64).ravel()
  three = ctypes.c_char * 24  # a triangle's three vertex pointers ("Qt": every facet)
  fverts = b"".join([three.from_address(a + 8).raw
                     for a in fraw[:, 8 + 64:8 + 72].copy().view(np.uint64).ravel().tolist()])
  vorder, forder = np.argsort(vrows[:, 0]), np.argsort(faddr)
  tri = np.frombuffer(fverts, np.uint64).reshape(-1, 3)
  tri = pid[vorder[np.searchsorted(vrows[:, 0], tri, sorter=vorder)]]
  toporient = (fraw[:, 8 + 113] & _TOPORIENT) > 0
  flat = np.array([f for n in nbrs for f in n], np.uint64)
  flat = forder[np.searchsorted(faddr, flat, sorter=forder)]
  return pid, flat, np.array([len(n) for n in nbrs], np.int64), tri, toporient


@functools.cache
def _warn_fallback(why: str) -> None:
  warnings.warn(f"qhull {VERSION} through cmeel-qhull is not usable here ({why}): mesh hulls "
                "come from scipy's qhull, equal to MuJoCo's except for the numbering of "
                "hull vertices in mesh_graph", stacklevel=3)


def _scipy_hull(points: np.ndarray, options: str):
  """`hull`'s result from scipy.spatial.ConvexHull: qhull's triangles in facet order;
  vertices numbered by first appearance and neighbouring facets in facet order instead of
  qhull's internal orders."""
  from scipy.spatial import ConvexHull
  from scipy.spatial import QhullError as ScipyQhullError
  try:
    h = ConvexHull(np.asarray(points, np.float64).reshape(-1, 3), qhull_options=f"Qt {options}")
  except (ScipyQhullError, ValueError) as e:
    raise QhullError(str(e).strip().splitlines()[0]) from None
  tri = h.simplices.astype(np.int64)
  a, b, c = (h.points[tri[:, k]] for k in range(3))
  toporient = ~(np.sum(np.cross(b - a, c - a) * h.equations[:, :3], axis=1) > 0)
  ids = np.array(list(dict.fromkeys(tri.ravel().tolist())), np.int64)
  owner = np.searchsorted(np.sort(ids), tri.ravel())
  rank = np.argsort(ids)
  order = np.argsort(rank[owner], kind="stable")
  return ids, order // 3, np.bincount(rank[owner], minlength=len(ids)), tri, toporient
