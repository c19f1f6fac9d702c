"""The planar viewer's scene in viser: the medium as a translucent slab, bodies and feet as solids,
each foot's contact force as an arrow.

The planar world is the x–z plane (y = 0), z up; the drawing extrudes it in y: the medium is a slab
below the terrain profile (BAND_DEPTH deep, 2 × BAND_HALF_WIDTH wide), a walker's torso a box, its
legs cylinders between their joints, a foot a cylinder from its plate along its axis, a wheel a disc
with a spoke. The nodes are made once per robot (:meth:`Scene.build`) and then only moved.

A foot's wrench (f_x, f_z, τ) is in F_r, whose axes are the contact frame's (the surface tangent and
normal, :mod:`granular.frames`): its arrow is the force turned into the world, starting at the point
the wrench acts on, ``1 / scale`` metres per newton (``scale`` in N per m), drawn just in front of
the plane (towards the default camera) so that the foot does not hide it.
"""
from __future__ import annotations

import numpy as np

BAND_DEPTH, BAND_HALF_WIDTH = 0.35, 0.3
ARROW_Y = -0.09            # the arrows' plane: in front of the feet, as the camera looks along +y
MEDIUM_COLOURS = {"sand": (214, 184, 130), "pebbles": (150, 146, 140), "beads": (205, 210, 225),
                  "rigid": (120, 120, 120), "wheel-dry-sand": (222, 196, 146), "wheel-sand": (196, 160, 110)}
BODY, FOOT, SELECTED, FORCE = (120, 124, 134), (60, 120, 200), (230, 120, 30), (205, 25, 25)


def medium_colour(name: str):
    """The slab's colour for a medium's name (a model file's dataset medium), tan if unknown."""
    return MEDIUM_COLOURS.get(str(name), (205, 175, 125))


def quat_y(angle):
    """Quaternion (w, x, y, z) of a counter-clockwise planar rotation as seen from −y (x right, z up)."""
    return (float(np.cos(angle / 2)), 0.0, float(-np.sin(angle / 2)), 0.0)


def _along(p0, p1):
    """Centre (x, y, z), length and quaternion that lay a node's local z along p0 → p1 (x–z points)."""
    d = np.asarray(p1, float) - np.asarray(p0, float)
    mid = (np.asarray(p0, float) + np.asarray(p1, float)) / 2
    return (float(mid[0]), 0.0, float(mid[1])), float(np.hypot(*d)), quat_y(np.arctan2(-d[0], d[1]))


def slab(xs, zs, depth=BAND_DEPTH, half=BAND_HALF_WIDTH):
    """Vertices and faces of the medium below the profile z(x): top, front, back, ends and bottom."""
    xs, zs = np.asarray(xs, float), np.asarray(zs, float)
    n = len(xs)
    bottom = np.full(n, zs.min() - depth)
    rings = [np.column_stack([xs, np.full(n, y), z]) for y, z in ((-half, zs), (half, zs), (half, bottom),
                                                                 (-half, bottom))]
    v = np.vstack(rings)                       # ring r, sample i: index r * n + i
    faces = []
    for r in range(4):                         # the four long sides: top, back, bottom, front
        a, b = r * n, ((r + 1) % 4) * n
        i = np.arange(n - 1)
        faces += [np.column_stack([a + i, a + i + 1, b + i]), np.column_stack([a + i + 1, b + i + 1, b + i])]
    for i, flip in ((0, True), (n - 1, False)):  # the ends
        quad = np.array([[i, n + i, 2 * n + i], [i, 2 * n + i, 3 * n + i]])
        faces.append(quad[:, ::-1] if flip else quad)
    return v.astype(np.float32), np.vstack(faces).astype(np.uint32)


def _place(handle, p0, p1):
    """A unit-height cylinder stretched from p0 to p1."""
    handle.position, length, handle.wxyz = _along(p0, p1)
    handle.scale = (1.0, 1.0, max(length, 1e-6))


class Scene:
    """The nodes of one planar scene: :meth:`medium` draws the ground, :meth:`build` a robot's solids
    (once per geometry), :meth:`draw` moves them and sets the force arrows."""

    def __init__(self, server):
        self.server = server
        self.geometry = None
        self.terrain_model = None
        self.torsos, self.links, self.feet, self.spokes, self.shanks = {}, {}, {}, {}, {}
        self.arrows = {}        # foot → arrows handle
        self.colours = {}
        self.forces = {}        # foot → (contact point (2,), world force (2,) in N): what the arrows show
        self.span = None        # (x_lo, x_hi) of the medium drawn
        self.slab = None

    # the medium -------------------------------------------------------------------------------
    def medium(self, xs, zs, name):
        """The medium under the profile z(x) as a translucent slab, its surface line at y = 0."""
        v, f = slab(xs, zs)
        self.slab = self.server.scene.add_mesh_simple("/medium/slab", vertices=v, faces=f, color=medium_colour(name),
                                                      opacity=0.55, side="double", flat_shading=True,
                                                      cast_shadow=False)
        pts = np.column_stack([xs, np.zeros(len(xs)), zs]).astype(np.float32)
        self.server.scene.add_line_segments("/medium/surface", np.stack([pts[:-1], pts[1:]], axis=1),
                                            colors=(110, 75, 30), thickness=3.0, thickness_units="screen")
        self.span = (float(xs[0]), float(xs[-1]))

    def medium_around(self, x, terrain, name, half=3.0):
        """Draw (or re-centre) the medium when x comes within a metre of the drawn span's ends."""
        if self.span is None or not (self.span[0] + 1.0 < x < self.span[1] - 1.0):
            xs = np.linspace(x - half, x + half, 121)
            self.medium(xs, terrain.height(xs), name)

    # the robot ----------------------------------------------------------------------------------
    def build(self, geometry):
        """Make the solids of a robot (removing a previous robot's)."""
        from granular.apps.plots import wheel_radius
        from granular.dynamics.terrain import Terrain

        for group in (self.torsos, self.links, self.feet, self.spokes, self.shanks, self.arrows):
            for handle in group.values():
                (handle[0] if isinstance(handle, tuple) else handle).remove()
            group.clear()
        self.forces, self.colours = {}, {}
        self.geometry = geometry
        pts = np.asarray(geometry["terrain"], float)
        self.terrain_model = Terrain(tuple(pts[:, 0]), tuple(pts[:, 1]))
        scene, parent = self.server.scene, list(geometry["parent"])
        for b, p in enumerate(parent):
            children = [c for c, q in enumerate(parent) if q == b]
            if p < 0 and children:  # a torso or chassis: a box around its joints
                joints = np.array([geometry["joint"][c] for c in children] + [[0.0, 0.0]])
                size = np.ptp(joints, axis=0) + 0.08
                box = scene.add_box(f"/robot/torso{b}", color=BODY, dimensions=(size[0], 0.22, max(size[1], 0.08)))
                self.torsos[b] = (box, (joints.max(axis=0) + joints.min(axis=0)) / 2)
            elif p >= 0 and parent[p] >= 0:  # a limb: from its parent's joint to its own
                self.links[b] = scene.add_cylinder(f"/robot/link{b}", radius=0.025, height=1.0, color=BODY)
        for f, b in enumerate(geometry["foot_body"]):
            radius, length = geometry["foot_size"][f]
            r = wheel_radius(geometry, f)
            if r > 0:
                self.feet[f] = scene.add_cylinder(f"/robot/foot{f}", radius=r, height=0.12, color=FOOT,
                                                  radial_segments=40)
                self.spokes[f] = scene.add_box(f"/robot/spoke{f}", dimensions=(0.03, 0.13, r), color=BODY)
            else:
                self.feet[f] = scene.add_cylinder(f"/robot/foot{f}", radius=float(radius), height=float(length),
                                                  color=FOOT)
            if parent[b] >= 0 or b in parent:  # a leg's last link: the foot's body frame to the foot
                self.shanks[f] = scene.add_cylinder(f"/robot/shank{f}", radius=0.02, height=1.0, color=BODY)
            self.arrows[f] = scene.add_arrows(f"/forces/{f}", np.zeros((1, 2, 3), np.float32), colors=FORCE,
                                              shaft_radius=0.012, head_radius=0.03, head_length=0.06, visible=False)

    def world_force(self, at, wrench):
        """A wrench's force (f_x, f_z) in F_r turned into world axes at the contact point ``at``."""
        n = self.terrain_model.closest(np.asarray(at, float)[None])[1][0]
        return wrench[0] * np.array([n[1], -n[0]]) + wrench[1] * n

    def draw(self, geometry, q, active, wrench, selected, scale):
        """Move the solids to the state q; arrows for the feet in contact, 1/scale m per N."""
        from granular.apps.plots import contact_point, foot_pose, scene_frames, wheel_radius

        if geometry is not self.geometry:
            self.build(geometry)
        angle, origin = scene_frames(geometry, q)
        parent = geometry["parent"]
        for b, (box, centre) in self.torsos.items():
            c, s = np.cos(angle[b]), np.sin(angle[b])
            at = origin[b] + np.array([[c, -s], [s, c]]) @ centre
            box.position, box.wxyz = (at[0], 0.0, at[1]), quat_y(angle[b])
        for b, link in self.links.items():
            _place(link, origin[parent[b]], origin[b])
        for f, b in enumerate(geometry["foot_body"]):
            pc, axis = foot_pose(geometry, angle, origin, f)
            foot, colour = self.feet[f], SELECTED if f == selected else FOOT
            if self.colours.get(f) != colour:
                foot.color = self.colours[f] = colour
            r = wheel_radius(geometry, f)
            if r > 0:  # a disc across the plane, its spoke showing the wheel turn
                foot.position, foot.wxyz = (pc[0], 0.0, pc[1]), (np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0)
                spoke = pc + axis * r / 2
                self.spokes[f].position = (spoke[0], -0.01, spoke[1])
                self.spokes[f].wxyz = quat_y(np.arctan2(-axis[0], axis[1]))
            else:
                foot.position, _, foot.wxyz = _along(pc, pc + axis * geometry["foot_size"][f][1])
            if f in self.shanks:
                _place(self.shanks[f], origin[b], pc)
            self._arrow(f, contact_point(geometry, f, pc, axis), wrench[f], bool(active[f]), scale)

    def _arrow(self, f, at, wrench, active, scale):
        force = self.world_force(at, wrench) if active else np.zeros(2)
        self.forces[f] = (np.asarray(at, float), force)
        handle = self.arrows[f]
        length = float(np.hypot(*force)) / scale
        if length < 1e-4:
            handle.visible = False
            return
        tip = at + force / scale
        handle.points = np.array([[[at[0], ARROW_Y, at[1]], [tip[0], ARROW_Y, tip[1]]]], np.float32)
        handle.head_length = min(0.06, 0.4 * length)
        handle.visible = True

    def arrow_length(self, f) -> float:
        """The drawn length (m) of foot f's arrow, 0 when hidden (what a test compares with force / scale)."""
        handle = self.arrows[f]
        return float(np.linalg.norm(np.diff(handle.points[0], axis=0))) if handle.visible else 0.0
