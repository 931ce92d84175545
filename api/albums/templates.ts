// Shot directions and the built-in templates. A direction says how one shot looks at the anchor's subject:
// framing, camera angle, lighting, pose or arrangement, and background. Each field is free text (an image
// service reads it as part of its prompt); the built-in generator recognises the keywords listed in
// api/images/direction-vocabulary.ts and uses the field's default for anything else.

export interface ShotDirection {
  [key: string]: string;
  name: string;
  framing: string;
  angle: string;
  lighting: string;
  pose: string;
  background: string;
}

export const templateNames = ['PortraitSession', 'ProductShoot', 'CharacterSheet'] as const;
export type TemplateName = (typeof templateNames)[number];

/** directionDefaults fill the fields a client's own direction leaves out. */
export const directionDefaults: Omit<ShotDirection, 'name'> = {
  framing: 'medium',
  angle: 'front',
  lighting: 'studio',
  pose: 'natural',
  background: 'plain grey',
};

const shot = (
  name: string,
  framing: string,
  angle: string,
  lighting: string,
  pose: string,
  background: string,
): ShotDirection => ({ name, framing, angle, lighting, pose, background });

export const templates: Readonly<Record<TemplateName, { description: string; directions: readonly ShotDirection[] }>> =
  {
    PortraitSession: {
      description: 'A portrait sitting: head shots and half-lengths under classic lighting setups.',
      directions: [
        shot('Head shot', 'close-up', 'front', 'soft', 'looking at camera', 'plain grey'),
        shot('Three-quarter', 'medium', 'three-quarter left', 'rembrandt', 'shoulders turned', 'warm gradient'),
        shot('Profile', 'close-up', 'profile right', 'rim', 'chin level', 'dark'),
        shot('Dramatic', 'medium', 'low', 'low-key', 'confident', 'black'),
        shot('Bright and airy', 'full', 'front', 'high-key', 'relaxed', 'white'),
        shot('Golden hour', 'medium', 'three-quarter right', 'golden hour', 'candid', 'outdoor'),
      ],
    },
    ProductShoot: {
      description: 'Catalogue and lifestyle shots of one product, from packshot to detail.',
      directions: [
        shot('Packshot', 'full', 'front', 'studio', 'single item, centred', 'white'),
        shot('Hero', 'medium', 'low', 'dramatic', 'single item, centred', 'dark gradient'),
        shot('Detail', 'extreme close-up', 'front', 'soft', 'single item', 'plain grey'),
        shot('Top down', 'full', 'overhead', 'soft', 'flat lay', 'pastel'),
        shot('Pair', 'wide', 'three-quarter left', 'studio', 'pair side by side', 'cool gradient'),
        shot('Reflection', 'full', 'front', 'cool', 'on a glossy surface with reflection', 'black'),
      ],
    },
    CharacterSheet: {
      description: 'A turnaround and expression sheet for one character, on flat backgrounds.',
      directions: [
        shot('Front view', 'full', 'front', 'flat', 'neutral stance', 'white'),
        shot('Three-quarter view', 'full', 'three-quarter right', 'flat', 'neutral stance', 'white'),
        shot('Side view', 'full', 'profile left', 'flat', 'neutral stance', 'white'),
        shot('Back view', 'full', 'back', 'flat', 'neutral stance', 'white'),
        shot('Expression close-up', 'close-up', 'front', 'soft', 'head tilted', 'pastel'),
        shot('Action', 'wide', 'dutch', 'dramatic', 'dynamic leap', 'warm gradient'),
      ],
    },
  };

export function isTemplateName(name: unknown): name is TemplateName {
  return typeof name === 'string' && (templateNames as readonly string[]).includes(name);
}
