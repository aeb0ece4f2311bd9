import { EventBus } from 'aws-cdk-lib/aws-events';
import { CfnRegistry, CfnSchema } from 'aws-cdk-lib/aws-eventschemas';
import type { Construct } from 'constructs';
import { eventCatalog, EVENT_TYPES } from '#domain/events/event-schemas.ts';
import { EVENT_SOURCE } from '#runtime/events.ts';
import { eventJsonSchema } from './event-schemas.ts';
import { SitePart } from './site-part.ts';

export interface RepairEventBusProps {
  siteName: string;
}

/** The site's repair events: the bus the stream handler publishes them on, and a registry of their schemas. */
export class RepairEventBus extends SitePart {
  readonly bus: EventBus;
  /** The bus's events, one JSON Schema per type (the ones docs/events/ holds). */
  readonly schemaRegistry: CfnRegistry;

  constructor(scope: Construct, id: string, { siteName }: RepairEventBusProps) {
    super(scope, id);
    this.bus = new EventBus(this, 'RepairEvents', {
      eventBusName: `fleetward-${siteName}`,
      description: `Repair events of Fleetward site ${siteName} (source "${EVENT_SOURCE}")`,
    });
    // Next to the bus, so consumers find each event's schema (and its code bindings) where the events are.
    this.schemaRegistry = new CfnRegistry(this, 'RepairEventSchemas', {
      registryName: `fleetward-${siteName}`,
      description: `Schemas of the repair events of Fleetward site ${siteName} (source "${EVENT_SOURCE}")`,
    });
    for (const type of EVENT_TYPES) {
      new CfnSchema(this, `${type}Schema`, {
        registryName: this.schemaRegistry.attrRegistryName,
        schemaName: `${EVENT_SOURCE}@${type}`,
        type: 'JSONSchemaDraft4',
        content: JSON.stringify(eventJsonSchema(type)),
        description: eventCatalog[type].description,
      });
    }
  }
}
