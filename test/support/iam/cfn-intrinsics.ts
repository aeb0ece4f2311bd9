/**
 * Resolves the intrinsics of a synthesized template's IAM statements (Ref, Fn::GetAtt, Fn::Join and the pseudo
 * parameters) to concrete ARNs, as CloudFormation would in one fixed fake account and region. Only the resource types
 * the functions' policies name are known; any other stops the resolution with its type, to be added on purpose.
 */
export const FAKE_ACCOUNT = '111122223333';
export const FAKE_REGION = 'eu-west-1';

export interface CfnTemplate {
  Resources: Record<string, { Type: string; Properties?: Record<string, any> }>;
}

const pseudo: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': FAKE_REGION,
  'AWS::AccountId': FAKE_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
};

export function cfnResolver(template: CfnTemplate): (value: unknown) => any {
  const resourceOf = (id: string) => {
    const resource = template.Resources[id];
    if (!resource) throw new Error(`the template has no resource ${id}`);
    return resource;
  };
  const arn = (service: string, rest: string) => `arn:aws:${service}:${FAKE_REGION}:${FAKE_ACCOUNT}:${rest}`;

  const ref = (id: string): string => {
    if (pseudo[id]) return pseudo[id];
    const { Type, Properties = {} } = resourceOf(id);
    switch (Type) {
      case 'AWS::DynamoDB::Table':
        return Properties.TableName ?? id;
      case 'AWS::Events::EventBus':
        return Properties.Name ?? id;
      case 'AWS::Logs::LogGroup':
        return Properties.LogGroupName ?? id;
      case 'AWS::SQS::Queue':
        return `https://sqs.${FAKE_REGION}.amazonaws.com/${FAKE_ACCOUNT}/${Properties.QueueName ?? id}`;
      case 'AWS::Lambda::Function':
        return Properties.FunctionName ?? id;
      case 'AWS::IAM::Role':
        return Properties.RoleName ?? id;
      default:
        throw new Error(`no Ref resolution for ${Type} (${id})`);
    }
  };

  const getAtt = (id: string, attribute: string): string => {
    const { Type, Properties = {} } = resourceOf(id);
    const key = `${Type}.${attribute}`;
    switch (key) {
      case 'AWS::DynamoDB::Table.Arn':
        return arn('dynamodb', `table/${ref(id)}`);
      case 'AWS::DynamoDB::Table.StreamArn':
        return arn('dynamodb', `table/${ref(id)}/stream/2020-01-01T00:00:00.000`);
      case 'AWS::Events::EventBus.Arn':
        return arn('events', `event-bus/${ref(id)}`);
      case 'AWS::Logs::LogGroup.Arn':
        return arn('logs', `log-group:${ref(id)}:*`);
      case 'AWS::SQS::Queue.Arn':
        return arn('sqs', Properties.QueueName ?? id);
      case 'AWS::Lambda::Function.Arn':
        return arn('lambda', `function:${ref(id)}`);
      case 'AWS::IAM::Role.Arn':
        return `arn:aws:iam::${FAKE_ACCOUNT}:role/${ref(id)}`;
      default:
        throw new Error(`no Fn::GetAtt resolution for ${key} (${id})`);
    }
  };

  const resolve = (value: unknown): any => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
    if (Array.isArray(value)) return value.map(resolve);
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 1) {
      const [[name, argument]] = entries as [[string, any]];
      if (name === 'Ref') return ref(argument);
      if (name === 'Fn::GetAtt') return getAtt(argument[0], argument[1]);
      if (name === 'Fn::Join') return (resolve(argument[1]) as string[]).join(argument[0]);
      if (name.startsWith('Fn::')) throw new Error(`no resolution for ${name}: ${JSON.stringify(argument)}`);
    }
    return Object.fromEntries(entries.map(([key, inner]) => [key, resolve(inner)]));
  };
  return resolve;
}
