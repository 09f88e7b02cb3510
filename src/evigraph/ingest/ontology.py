"""The default ontology: general-purpose entity types that suit most document collections."""

from __future__ import annotations

from evigraph.models import DEFAULT_RELATION_TYPE, EntityType, Ontology, RelationType

DEFAULT_ONTOLOGY = Ontology(
    entities=(
        EntityType(label="Person", description="A named human being, real or fictional."),
        EntityType(label="Organization", description="A company, institution, agency, team or group."),
        EntityType(label="Technology", description="A software system, library, protocol or technique."),
        EntityType(label="Product", description="A named product, device, vehicle or work offered to users."),
        EntityType(label="Location", description="A place: country, city, region, building, landmark."),
        EntityType(label="Date", description="A calendar date, year, period or time expression."),
        EntityType(label="Event", description="A named happening: war, election, release, meeting."),
        EntityType(label="Concept", description="An abstract idea, field, theory or named topic."),
        EntityType(label="Law", description="A law, regulation, treaty, standard or policy."),
        EntityType(label="Dataset", description="A named collection of data or a benchmark."),
        EntityType(label="Method", description="A named method, algorithm or procedure."),
    ),
    relations=(
        RelationType(
            type=DEFAULT_RELATION_TYPE,
            description="The two entities are named in the same sentence; the fact is that sentence.",
        ),
    ),
)
