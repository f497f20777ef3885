# SPDX-License-Identifier: BSD-2-Clause
"""The foundation, and all the gateware and the firmware's generated tables import: units, the
parameter types, the register map, the protocol with every record layout, the board registry and
the validator with its budget arithmetic. Nothing here imports a model, a profile or a stack."""
