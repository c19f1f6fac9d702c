"""A 3D robot from its file: an MJCF as MuJoCo loads it, or a URDF made ready to walk.

MuJoCo compiles a URDF as it stands, which is rarely what a legged robot needs: the URDF has no
actuators, and its root link is welded to the world (URDF cannot say "free"). A robot named by
``urdf`` is therefore loaded through ``mujoco.MjSpec``: its root link gets a free joint unless
``floating = false``, and every hinge or slide joint a position actuator (gains ``kp``, ``kv``;
force limits the URDF's ``effort``; control range its ``limit``), in the order of the joints,
integrated with ``implicitfast`` (stiff servos integrated explicitly would limit the time step).
Geoms keep the URDF's collision names, so feet are named as in the URDF; a foot may also be named
by its link, whose one collision geom is then the foot (:func:`foot_geoms`).
"""
from __future__ import annotations

from pathlib import Path

from granular.errors import GranularError


def load(model_file: Path, urdf: bool, floating: bool = True, kp: float = 200.0, kv: float = 10.0):
    """The compiled ``mujoco.MjModel`` of ``model_file`` (an MJCF, or a URDF if ``urdf``)."""
    import mujoco

    try:
        if not urdf:
            return mujoco.MjModel.from_xml_path(str(model_file))
        spec = mujoco.MjSpec.from_file(str(model_file))
        spec.compiler.fusestatic = False  # keep the root link a body of its own: it may float
        roots = list(spec.worldbody.bodies)
        if floating:
            if len(roots) != 1:
                raise GranularError(f"{model_file}: a floating URDF robot needs one root link; found "
                                    f"{len(roots)}")
            roots[0].add_freejoint()
        for joint in spec.joints:
            if joint.type not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                continue
            act = spec.add_actuator(name=joint.name, target=joint.name,
                                    trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.set_to_position(kp=kp, kv=kv)
            if joint.limited == mujoco.mjtLimited.mjLIMITED_TRUE or joint.range[0] < joint.range[1]:
                act.ctrlrange, act.ctrllimited = joint.range, mujoco.mjtLimited.mjLIMITED_TRUE
            if joint.actfrcrange[0] < joint.actfrcrange[1]:
                act.forcerange, act.forcelimited = joint.actfrcrange, mujoco.mjtLimited.mjLIMITED_TRUE
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        return spec.compile()
    except ValueError as exc:
        raise GranularError(f"{model_file}: MuJoCo cannot load it: {' '.join(str(exc).split())}") from None


def foot_geoms(mj_model, names) -> list[str]:
    """The feet's geom names: each name a geom's, or else a body's (a URDF link's) whose one geom, or
    one collision geom (contype or conaffinity set), is the foot."""
    import mujoco

    out = []
    for name in names:
        if mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, name) >= 0:
            out.append(name)
            continue
        body = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, name)
        if body < 0:
            out.append(name)  # attach() names what is missing
            continue
        geoms = [g for g in range(mj_model.ngeom) if mj_model.geom_bodyid[g] == body]
        if len(geoms) > 1:  # a visual geom beside the collision one
            geoms = [g for g in geoms if mj_model.geom_contype[g] or mj_model.geom_conaffinity[g]]
        if len(geoms) != 1:
            raise GranularError(f"foot {name!r} is a body with {len(geoms)} collision geoms; name the geom itself")
        geom_name = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_GEOM, geoms[0])
        if not geom_name:
            raise GranularError(f"foot {name!r}: its collision geom has no name; name the URDF's <collision> "
                                f"and list that name")
        out.append(geom_name)
    return out
