import { Aws, Fn, Validations } from 'aws-cdk-lib';
import {
  CfnVPCEndpoint,
  InterfaceVpcEndpoint,
  InterfaceVpcEndpointAwsService,
  Peer,
  Port,
  SecurityGroup,
  Subnet,
  Vpc,
  type ISecurityGroup,
  type ISubnet,
  type IVpc,
} from 'aws-cdk-lib/aws-ec2';
import { Construct } from 'constructs';
import type { SiteConfig } from '#config/site-config.ts';
import type { FunctionNetwork } from './fleetward-function.ts';

export type AgentVpcConfig = NonNullable<SiteConfig['site_agent']['vpc']>;

export interface AgentNetworkProps {
  siteName: string;
  vpc: AgentVpcConfig;
}

/**
 * Where the functions that call the site agent run when `[site_agent] vpc` is set: in the operator's VPC, which reaches
 * a private agent over a VPN or PrivateLink. Everything is imported by id, so synth needs no AWS lookups. Such a
 * function reaches AWS only through VPC endpoints (no NAT is assumed): DynamoDB (a gateway endpoint on the subnets'
 * route tables), EventBridge and Secrets Manager (interface endpoints with private DNS, in the same subnets). The stack
 * makes them unless `create_endpoints = false` says the VPC has them already. Logs, metrics (EMF, in the logs) and
 * traces leave through Lambda itself, not through the function's network.
 */
export class AgentNetwork extends Construct implements FunctionNetwork {
  readonly vpc: IVpc;
  readonly subnets: ISubnet[];
  /** The operator's security groups, left as they are (not mutable): their outbound rules are the operator's. */
  readonly securityGroups: ISecurityGroup[];
  /** The endpoints' own security group: HTTPS in from the functions' groups, nothing else. Absent without endpoints. */
  readonly endpointSecurityGroup: SecurityGroup | undefined;

  constructor(scope: Construct, id: string, props: AgentNetworkProps) {
    super(scope, id);
    const { vpc } = props;
    // The import asks for the VPC's zones; the region's are the truth, and nothing reads them (see the acknowledgment).
    this.vpc = Vpc.fromVpcAttributes(this, 'Vpc', { vpcId: vpc.vpc_id, availabilityZones: Fn.getAzs() });
    Validations.of(this.vpc).acknowledge({
      id: '@aws-cdk/aws-ec2:vpcAttributeIsListTokenavailabilityZones',
      reason:
        'The functions and the interface endpoints are given their subnets one by one, by id; nothing selects subnets of this ' +
        'imported VPC by zone or type, which is what a zone list unknown at synth would break.',
    });
    this.subnets = vpc.subnet_ids.map((subnetId) => {
      const subnet = Subnet.fromSubnetId(this, subnetId, subnetId);
      Validations.of(subnet).acknowledge({
        id: '@aws-cdk/aws-ec2:noSubnetRouteTableId',
        reason:
          "Nothing reads this subnet's route table: the only construct that needs route tables, the DynamoDB gateway endpoint, " +
          'takes them from [site_agent] vpc route_table_ids.',
      });
      return subnet;
    });
    this.securityGroups = vpc.security_group_ids.map((groupId) => SecurityGroup.fromSecurityGroupId(this, groupId, groupId, { mutable: false }));
    if (!vpc.create_endpoints) {
      this.endpointSecurityGroup = undefined;
      return;
    }

    this.endpointSecurityGroup = new SecurityGroup(this, 'EndpointSecurityGroup', {
      vpc: this.vpc,
      description: `Fleetward ${props.siteName}: HTTPS to the VPC endpoints from the functions that call the site agent`,
      allowAllOutbound: false,
    });
    for (const group of this.securityGroups) {
      this.endpointSecurityGroup.addIngressRule(Peer.securityGroupId(group.securityGroupId), Port.tcp(443), `HTTPS from ${group.securityGroupId}`);
    }
    // A gateway endpoint is a route in the route tables, which the import of a subnet by id does not know: L1.
    new CfnVPCEndpoint(this, 'DynamoDbEndpoint', {
      vpcId: vpc.vpc_id,
      serviceName: `com.amazonaws.${Aws.REGION}.dynamodb`,
      vpcEndpointType: 'Gateway',
      routeTableIds: vpc.route_table_ids,
    });
    const interfaceEndpoint = (name: string, service: InterfaceVpcEndpointAwsService) =>
      new InterfaceVpcEndpoint(this, name, {
        vpc: this.vpc,
        service,
        subnets: { subnets: this.subnets },
        securityGroups: [this.endpointSecurityGroup!],
        // Only the groups above may connect (`open` would allow the whole VPC's CIDR, which the import does not know).
        open: false,
        privateDnsEnabled: true,
      });
    interfaceEndpoint('EventsEndpoint', InterfaceVpcEndpointAwsService.EVENTBRIDGE);
    interfaceEndpoint('SecretsManagerEndpoint', InterfaceVpcEndpointAwsService.SECRETS_MANAGER);
  }
}
